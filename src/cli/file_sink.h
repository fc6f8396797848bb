// A buffered file for trace output (the core only sees a ByteSink).
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "config/error.h"
#include "trace/byte_sink.h"

namespace sc::cli {

class FileSink final : public ByteSink {
public:
    explicit FileSink(const std::string& path) : path_(path), buf_(1 << 20) {
        f_ = std::fopen(path.c_str(), "wb");
        if (!f_) throw Error(path, "cannot create file");
        std::setvbuf(f_, buf_.data(), _IOFBF, buf_.size());
    }
    // Closing here cannot report a failure (a destructor must not throw): callers Close() to learn of one;
    // this only covers the paths that leave early on another error.
    ~FileSink() override {
        if (f_) std::fclose(f_);
    }
    void Write(std::string_view b) override {
        if (std::fwrite(b.data(), 1, b.size(), f_) != b.size()) throw Error(path_, "write failed (disk full?)");
        bytes_ += b.size();
    }
    void Close() {
        if (f_ && std::fclose(f_) != 0) {
            f_ = nullptr;
            throw Error(path_, "write failed on close");
        }
        f_ = nullptr;
    }
    unsigned long long bytes() const { return bytes_; }

private:
    std::string path_;
    std::vector<char> buf_;
    std::FILE* f_ = nullptr;
    unsigned long long bytes_ = 0;
};

}  // namespace sc::cli
