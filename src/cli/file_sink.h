// A buffered file for trace output (the core only sees a ByteSink).
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "config/error.h"
#include "trace/byte_sink.h"

namespace sc::cli {

// Writes `path` + ".part" and renames it to `path` on Close(), so a file under its own name is always
// complete: an error, a cancel or an early return removes the partial file instead.
class FileSink final : public ByteSink {
public:
    explicit FileSink(const std::string& path) : path_(path), part_(path + ".part"), buf_(1 << 20) {
        f_ = std::fopen(part_.c_str(), "wb");
        if (!f_) throw Error(path, "cannot create file");
        std::setvbuf(f_, buf_.data(), _IOFBF, buf_.size());
    }
    // Not closed: the file is incomplete, so it goes (a destructor cannot report; callers Close()).
    ~FileSink() override {
        if (f_) {
            std::fclose(f_);
            std::remove(part_.c_str());
        }
    }
    void Write(std::string_view b) override {
        if (std::fwrite(b.data(), 1, b.size(), f_) != b.size()) throw Error(path_, "write failed (disk full?)");
        bytes_ += b.size();
    }
    void Close() {
        if (!f_) return;
        const bool ok = std::fclose(f_) == 0;
        f_ = nullptr;
        if (!ok || std::rename(part_.c_str(), path_.c_str()) != 0) {
            std::remove(part_.c_str());
            throw Error(path_,
                        ok ? "cannot rename the finished file into place" : "write failed on close (disk full?)");
        }
    }
    unsigned long long bytes() const { return bytes_; }

private:
    std::string path_, part_;
    std::vector<char> buf_;
    std::FILE* f_ = nullptr;
    unsigned long long bytes_ = 0;
};

}  // namespace sc::cli
