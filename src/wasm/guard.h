// One guard for the Embind APIs: a C++ exception must never cross into JavaScript (under -fwasm-exceptions
// an escaped exception leaks its heap allocation and the module's state, and enough of them kill the
// module), and bad arguments are errors, never a silent default. Call results are {ok: true, ...} or
// {ok: false, error: "field: message"}.
#pragma once
#include <emscripten/val.h>

#include <cmath>
#include <exception>
#include <new>
#include <string>
#include <type_traits>

#include "config/error.h"

namespace scweb {

using emscripten::val;

inline val Failure(const std::string& message) {
    val r = val::object();
    r.set("ok", false);
    r.set("error", message);
    return r;
}

// Runs f() -> val; any exception becomes {ok: false, error}.
template <typename F>
val Guard(F&& f) {
    try {
        return f();
    } catch (const sc::Error& e) {
        return Failure(e.what());
    } catch (const std::bad_alloc&) {
        // What ran out is the module's memory (CMakeLists.txt: -sMAXIMUM_MEMORY=4GB), not a bug of the input.
        return Failure(
            "out of memory: this needs more than the page's 4 GB of WebAssembly memory; the command line "
            "(stagecraft) has no such limit, or choose fewer microbatches or ranks");
    } catch (const std::exception& e) {
        return Failure(std::string("internal error: ") + e.what());
    } catch (...) {
        return Failure("internal error: unknown exception");
    }
}

// The message of whatever f() throws ("" when it returns normally): for the calls whose result is "" or the error.
template <typename F>
std::string ErrorOf(F&& f) {
    val r = Guard([&] {
        f();
        val ok = val::object();
        ok.set("ok", true);
        return ok;
    });
    return r["ok"].as<bool>() ? std::string() : r["error"].as<std::string>();
}

// For the methods that hand JS a plain value (bool, number, string, nothing) rather than {ok, ...}: the same
// Guard, with what f() throws kept in `error` (the object's error()/lastError() says it) and the type's empty
// value returned. Every Embind method of the three binding files goes through Guard, directly or here.
// (For a val, the empty value is null.)
template <typename F>
auto Kept(std::string& error, F&& f) -> decltype(f()) {
    using R = decltype(f());
    if constexpr (std::is_void_v<R>) {
        std::string e = ErrorOf([&] { f(); });
        if (!e.empty()) error = std::move(e);
    } else {
        R out = [] {
            if constexpr (std::is_same_v<R, val>) return val::null();
            else return R{};
        }();
        std::string e = ErrorOf([&] { out = f(); });
        if (!e.empty()) error = std::move(e);
        return out;
    }
}

// A JavaScript value that must be an integer in [lo, hi]: a number, finite, whole, in range.
inline long long IntegerArg(const val& v, const char* field, long long lo, long long hi) {
    if (!v.isNumber()) throw sc::Error(field, "expected an integer, got a " + v.typeOf().as<std::string>());
    const double x = v.as<double>();
    if (!std::isfinite(x) || x != std::floor(x) || x < static_cast<double>(lo) || x > static_cast<double>(hi))
        throw sc::Error(field, "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                                   ", got " + val::global("String")(v).as<std::string>());
    return static_cast<long long>(x);
}

// A JavaScript string argument.
inline std::string StringArg(const val& v, const char* field) {
    if (!v.isString()) throw sc::Error(field, "expected a string, got a " + v.typeOf().as<std::string>());
    return v.as<std::string>();
}

}  // namespace scweb
