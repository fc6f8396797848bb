// Checks the wasm build's memcpy (src/platform/wasm_memcpy.cpp) against a byte loop: every size up to
// 1,100 bytes (both sides of the 8-byte, 32-byte and 512-byte paths) at every source and destination
// offset modulo 8, with guard bytes around the destination that must stay untouched.
// Prints "memcpy: N copies checked" and exits 0, or prints the first mismatch and exits 1.
#include <cstdio>
#include <cstring>
#include <vector>

int main() {
    const size_t kMax = 1100, kGuard = 16;
    std::vector<unsigned char> src(kMax + 16), dst(kMax + 2 * kGuard + 16), want(dst.size());
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
    // Through a volatile pointer so the compiler cannot inline the copies: the library memcpy runs.
    void* (*volatile copy)(void*, const void*, size_t) = &std::memcpy;
    long checked = 0;
    for (size_t n = 0; n <= kMax; ++n)
        for (size_t so = 0; so < 8; ++so)
            for (size_t dof = 0; dof < 8; ++dof) {
                std::fill(dst.begin(), dst.end(), 0xAB);
                std::fill(want.begin(), want.end(), 0xAB);
                for (size_t i = 0; i < n; ++i) want[kGuard + dof + i] = src[so + i];
                if (copy(dst.data() + kGuard + dof, src.data() + so, n) != dst.data() + kGuard + dof) {
                    std::printf("memcpy: n=%zu src+%zu dst+%zu did not return dest\n", n, so, dof);
                    return 1;
                }
                for (size_t i = 0; i < dst.size(); ++i)
                    if (dst[i] != want[i]) {
                        std::printf("memcpy: n=%zu src+%zu dst+%zu differs at byte %zu of the buffer\n", n, so, dof, i);
                        return 1;
                    }
                ++checked;
            }
    std::printf("memcpy: %ld copies checked\n", checked);
    return 0;
}
