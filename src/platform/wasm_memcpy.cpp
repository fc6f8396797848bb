// memcpy for the WebAssembly builds (compiled only there; see CMakeLists.txt).
//
// Why: Emscripten 3.1.6's memcpy (system/lib/libc/emscripten_memcpy.c) copies word by word only when source
// and destination share their alignment modulo 4 and otherwise one byte at a time. Appending encoded
// trace records to a buffer is almost always the misaligned case: under Node, 42% of the per-rank Chakra
// ET write (scripts/bench (e)) was that byte loop. WebAssembly loads and stores need no alignment
// (an unaligned i64.load is one instruction on x86 and ARM), so this copies 8 bytes per access whatever
// the alignment. Copies of 512 bytes and more still go to JavaScript's HEAPU8.copyWithin, as the libc
// version does. libc's memcpy is a weak alias, so this strong definition replaces it in every wasm
// binary that links the core; tests/wasm/memcpy_check.cpp compares it with a byte loop.
#ifdef __EMSCRIPTEN__
#include <cstddef>
#include <cstdint>

extern "C" {
// Emscripten's JS library function behind libc's large copies (HEAPU8.copyWithin; returns nothing useful).
void emscripten_memcpy_big(void* dest, const void* src, size_t n);

namespace {
// An 8-byte integer that may sit at any address: loads and stores of it compile to i64.load/i64.store
// with alignment hint 1.
typedef uint64_t __attribute__((aligned(1), may_alias)) unaligned_u64;
typedef uint32_t __attribute__((aligned(1), may_alias)) unaligned_u32;
}  // namespace

// no_builtin: the byte loops below must not be turned back into calls to memcpy.
__attribute__((no_builtin("memcpy"))) void* memcpy(void* __restrict dest, const void* __restrict src, size_t n) {
    if (n >= 512) {
        emscripten_memcpy_big(dest, src, n);
        return dest;
    }
    unsigned char* d = static_cast<unsigned char*>(dest);
    const unsigned char* s = static_cast<const unsigned char*>(src);
    if (n >= 8) {
        // Whole 8-byte words, then one last word that ends exactly at the end (it may overlap the
        // previous one, which is harmless: source and destination do not overlap each other).
        const unsigned char* const last = s + n - 8;
        unsigned char* const dlast = d + n - 8;
        while (n >= 32) {
            *reinterpret_cast<unaligned_u64*>(d) = *reinterpret_cast<const unaligned_u64*>(s);
            *reinterpret_cast<unaligned_u64*>(d + 8) = *reinterpret_cast<const unaligned_u64*>(s + 8);
            *reinterpret_cast<unaligned_u64*>(d + 16) = *reinterpret_cast<const unaligned_u64*>(s + 16);
            *reinterpret_cast<unaligned_u64*>(d + 24) = *reinterpret_cast<const unaligned_u64*>(s + 24);
            d += 32, s += 32, n -= 32;
        }
        while (n > 8) {
            *reinterpret_cast<unaligned_u64*>(d) = *reinterpret_cast<const unaligned_u64*>(s);
            d += 8, s += 8, n -= 8;
        }
        *reinterpret_cast<unaligned_u64*>(dlast) = *reinterpret_cast<const unaligned_u64*>(last);
        return dest;
    }
    if (n >= 4) {  // 4..7 bytes: two 4-byte words that may overlap
        *reinterpret_cast<unaligned_u32*>(d) = *reinterpret_cast<const unaligned_u32*>(s);
        *reinterpret_cast<unaligned_u32*>(d + n - 4) = *reinterpret_cast<const unaligned_u32*>(s + n - 4);
        return dest;
    }
    while (n--) *d++ = *s++;
    return dest;
}
}  // extern "C"
#endif
