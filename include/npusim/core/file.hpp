// Small file helpers: whole-file reads with a size cap, and atomic writes (temp file + rename,
// whole or streamed) so that a failure never leaves a partial output behind.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npusim/core/error.hpp"

namespace npusim::inline NPUSIM_ABI {

// A whole regular file mapped copy-on-write (MAP_PRIVATE + PROT_WRITE: zero-copy views of it may
// be written in memory, the file never changes); unmapped when the last owner of `data` goes.
// `data` is null for an empty file.
struct MappedFile {
  std::shared_ptr<void> data;
  std::uint64_t size = 0;
};

// What a file system node is, for errors ("a FIFO", "a character device", ...).
inline const char* file_kind(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return "a regular file";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a FIFO or pipe";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

// The one way npusim opens an input file: without blocking (opening a FIFO for reading would wait
// for a writer forever), then anything but a regular file is refused, naming what it is. Returns a
// descriptor in blocking mode; the caller closes it.
inline int open_regular_file(const std::string& path, struct stat& st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(ErrorCode::io, std::string("cannot open: ") + std::strerror(errno), {.file = path});
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(ErrorCode::io, std::string("cannot stat: ") + std::strerror(err), {.file = path});
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorCode::io, "is a directory, expected a file", {.file = path});
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorCode::io, "not a regular file", {.file = path, .expected = "a regular file", .found = file_kind(st)});
  }
  if (const int fl = ::fcntl(fd, F_GETFL); fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}
// What is at `path`, for a message where a file was expected: "none", or file_kind's words ("a
// directory", ...), so that a directory is never reported as missing.
inline std::string path_kind(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) != 0 ? "none" : file_kind(st);
}

// The same check, for readers that open the file themselves afterwards.
inline void require_regular_file(const std::string& path) {
  struct stat st {};
  ::close(open_regular_file(path, st));
}

inline MappedFile map_file(const std::string& path) {
  struct stat st {};
  const int fd = open_regular_file(path, st);
  MappedFile m;
  m.size = static_cast<std::uint64_t>(st.st_size);
  if (m.size > 0) {
    void* p = ::mmap(nullptr, m.size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw Error(ErrorCode::io, std::string("mmap failed: ") + std::strerror(err), {.file = path});
    }
    m.data = std::shared_ptr<void>(p, [size = m.size](void* q) { ::munmap(q, size); });
  }
  ::close(fd);
  return m;
}

inline std::string read_file(const std::string& path, std::uint64_t max_bytes = std::uint64_t{1} << 32) {
  struct stat st {};
  const int fd = open_regular_file(path, st);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    throw Error(ErrorCode::resource, "file too large", {.file = path, .expected = "<= " + std::to_string(max_bytes) + " bytes",
                                                         .found = std::to_string(size) + " bytes"});
  }
  std::string s(static_cast<std::size_t>(size), '\0');
  std::size_t got = 0;
  while (got < s.size()) {
    const ::ssize_t n = ::read(fd, s.data() + got, s.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : 0;
      ::close(fd);
      throw Error(ErrorCode::io, std::string("read failed") + (err ? std::string(": ") + std::strerror(err) : std::string(": the file shrank while read")),
                  {.file = path});
    }
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return s;
}

// A file written under `path.tmp.<pid>` and renamed to `path` by commit(): readers see the old
// file or the complete new one, never a prefix. Streams (no need to hold a large file in memory)
// and can patch bytes already written (a header whose checksums are known only at the end).
// Destroyed without commit() (an exception), it removes the temporary file.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
    if (std::error_code ec; std::filesystem::is_directory(path_, ec))
      throw Error(ErrorCode::io, "the output path is a directory", {.file = path_, .expected = "a file name (the file is created or replaced)"});
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (!f_) throw Error(ErrorCode::io, std::string("cannot create: ") + std::strerror(errno), {.file = tmp_});
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile() {
    if (f_) std::fclose(f_);
    if (!committed_) {
      std::error_code ec;
      std::filesystem::remove(tmp_, ec);
    }
  }

  std::uint64_t size() const { return size_; }
  void write(std::string_view bytes) {
    errno = 0;
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f_) != bytes.size()) fail("write failed");
    size_ += bytes.size();
  }
  void write_zeros(std::uint64_t n) {
    static constexpr char zeros[4096] = {};
    for (; n; n -= std::min<std::uint64_t>(n, sizeof zeros)) write(std::string_view(zeros, std::min<std::uint64_t>(n, sizeof zeros)));
  }
  // Overwrites bytes at `offset` (< size()); later writes still append.
  void patch(std::uint64_t offset, std::string_view bytes) {
    if (offset + bytes.size() > size_) fail("patch past the end of the file (npusim bug)");
    errno = 0;
    if (::fseeko(f_, static_cast<off_t>(offset), SEEK_SET) != 0 || std::fwrite(bytes.data(), 1, bytes.size(), f_) != bytes.size() ||
        ::fseeko(f_, 0, SEEK_END) != 0)
      fail("write failed");
  }
  void commit() {
    errno = 0;
    const bool ok = std::fflush(f_) == 0;
    const bool closed = std::fclose(f_) == 0;
    f_ = nullptr;
    if (!ok || !closed) fail("write failed");
    std::error_code ec;
    std::filesystem::rename(tmp_, path_, ec);
    if (ec) throw Error(ErrorCode::io, "cannot rename temporary file into place: " + ec.message(), {.file = path_});
    committed_ = true;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::io, what + (errno ? std::string(": ") + std::strerror(errno) : std::string()), {.file = tmp_});
  }
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  std::uint64_t size_ = 0;
  bool committed_ = false;
};

// Writes `bytes` to `path` through `path.tmp.<pid>` + rename (AtomicFile).
inline void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

}  // namespace npusim::inline NPUSIM_ABI
