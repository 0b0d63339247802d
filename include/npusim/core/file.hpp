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
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <vector>
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

// Inputs this process has read, for refusing an output that would replace one (`compile ir.json -o
// ir.json`). Off by default (a library user may mean to rewrite a file it read); the CLI turns it on.
// Files are told apart by device and inode, so a symlink or hard link to an input is that input.
namespace file_detail {
struct InputLog {
  std::mutex mutex;
  bool on = false;
  std::vector<std::tuple<dev_t, ino_t, std::string>> files;
};
inline InputLog& input_log() {
  static InputLog log;
  return log;
}
inline void note_input(const struct stat& st, const std::string& path) {
  InputLog& log = input_log();
  std::lock_guard lock(log.mutex);
  if (!log.on) return;
  for (const auto& [dev, ino, p] : log.files)
    if (dev == st.st_dev && ino == st.st_ino) return;
  log.files.emplace_back(st.st_dev, st.st_ino, path);
}
// The input path that is this file, or empty.
inline std::string input_named_by(const struct stat& st) {
  InputLog& log = input_log();
  std::lock_guard lock(log.mutex);
  for (const auto& [dev, ino, p] : log.files)
    if (dev == st.st_dev && ino == st.st_ino) return p;
  return {};
}
}  // namespace file_detail

// From now on, every file opened through open_regular_file is remembered and AtomicFile refuses to
// write onto one of them (`on = false` forgets them and stops).
inline void refuse_outputs_onto_inputs(bool on = true) {
  file_detail::InputLog& log = file_detail::input_log();
  std::lock_guard lock(log.mutex);
  log.on = on;
  if (!on) log.files.clear();
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
  file_detail::note_input(st, path);
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

// The one way npusim writes an output file. To a regular file (or a new one): written under
// `FILE.tmp.<pid>` beside it and renamed onto it by commit(), so readers see the old file or the
// complete new one, never a prefix; a symlink is followed and the file it points to is replaced
// (the link stays a link); a dangling symlink is refused. To a character device (/dev/null, a
// terminal) or a FIFO with a reader (`--json >(jq .)`): written to an unnamed temporary file first
// and copied through on commit(), so a failure writes nothing there either; the node is never
// replaced. A FIFO without a reader is refused (opened without blocking), as are directories, block
// devices, sockets and a file this process read as an input (refuse_outputs_onto_inputs).
// Streams (no need to hold a large file in memory) and can patch bytes already written (a header
// whose checksums are known only at the end). Destroyed without commit() (an exception), it
// removes the temporary file.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path) : path_(std::move(path)) {
    struct stat lst {};
    if (::lstat(path_.c_str(), &lst) != 0) {
      if (errno != ENOENT) throw Error(ErrorCode::io, std::string("cannot stat the output path: ") + std::strerror(errno), {.file = path_});
      create_temporary(path_);  // a new file
      return;
    }
    struct stat st = lst;
    std::string target = path_;
    if (S_ISLNK(lst.st_mode)) {
      if (::stat(path_.c_str(), &st) != 0)
        throw Error(ErrorCode::io, std::string("the output path is a symlink to nothing that can be written (") + std::strerror(errno) + ")",
                    {.file = path_, .expected = "a symlink to an existing file", .found = "a dangling symlink"});
      if (S_ISREG(st.st_mode)) {
        std::error_code ec;
        target = std::filesystem::canonical(path_, ec).string();
        if (ec) throw Error(ErrorCode::io, "cannot resolve the output symlink: " + ec.message(), {.file = path_});
      }
    }
    if (S_ISDIR(st.st_mode))
      throw Error(ErrorCode::io, "the output path is a directory", {.file = path_, .expected = "a file name (the file is created or replaced)"});
    if (S_ISREG(st.st_mode)) {
      if (const std::string in = file_detail::input_named_by(st); !in.empty())
        throw Error(ErrorCode::io, in == path_ ? "the output would replace an input of this command"
                                               : "the output would replace an input of this command, read as " + in,
                    {.file = path_, .expected = "an output path other than the inputs", .found = "the same file as the input " + in});
      create_temporary(target);
      return;
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      // O_NONBLOCK: opening a FIFO that no process reads fails at once (ENXIO) instead of waiting.
      fd_ = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
      if (fd_ < 0) {
        const int err = errno;
        if (err == ENXIO && S_ISFIFO(st.st_mode))
          throw Error(ErrorCode::io, "the output is a FIFO that no process is reading", {.file = path_, .expected = "a reader on the FIFO", .found = "none"});
        throw Error(ErrorCode::io, std::string("cannot open the output: ") + std::strerror(err), {.file = path_});
      }
      if (const int fl = ::fcntl(fd_, F_GETFL); fl >= 0) ::fcntl(fd_, F_SETFL, fl & ~O_NONBLOCK);
      f_ = std::tmpfile();
      if (!f_) throw Error(ErrorCode::io, std::string("cannot create a temporary file: ") + std::strerror(errno), {.file = path_});
      return;
    }
    throw Error(ErrorCode::io, "the output path is not a file npusim can write",
                {.file = path_, .expected = "a regular file, a character device or a FIFO", .found = file_kind(st)});
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile() {
    if (f_) std::fclose(f_);
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !tmp_.empty()) {
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
    if (fd_ >= 0) return copy_through();
    const bool ok = std::fflush(f_) == 0;
    const bool closed = std::fclose(f_) == 0;
    f_ = nullptr;
    if (!ok || !closed) fail("write failed");
    std::error_code ec;
    std::filesystem::rename(tmp_, target_, ec);
    if (ec) throw Error(ErrorCode::io, "cannot rename temporary file into place: " + ec.message(), {.file = path_});
    committed_ = true;
  }

 private:
  // O_EXCL: never follows or truncates something already at the temporary name.
  void create_temporary(const std::string& target) {
    target_ = target;
    tmp_ = target + ".tmp." + std::to_string(::getpid());
    const int fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 || !(f_ = ::fdopen(fd, "wb"))) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      const std::string failed = tmp_;
      tmp_.clear();  // not ours to remove
      throw Error(ErrorCode::io, std::string("cannot create: ") + std::strerror(err), {.file = failed});
    }
  }
  // The whole output, from the temporary file into the device or FIFO.
  void copy_through() {
    if (std::fflush(f_) != 0 || ::fseeko(f_, 0, SEEK_SET) != 0) fail("write failed");
    char buf[1 << 16];
    for (;;) {
      const std::size_t n = std::fread(buf, 1, sizeof buf, f_);
      for (std::size_t done = 0; done < n;) {
        const ::ssize_t w = ::write(fd_, buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) throw Error(ErrorCode::io, std::string("write failed: ") + std::strerror(w < 0 ? errno : EIO), {.file = path_});
        done += static_cast<std::size_t>(w);
      }
      if (n < sizeof buf) break;
    }
    if (std::ferror(f_)) fail("read of the temporary file failed");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 && errno != EINTR) throw Error(ErrorCode::io, std::string("write failed: ") + std::strerror(errno), {.file = path_});
    committed_ = true;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::io, what + (errno ? std::string(": ") + std::strerror(errno) : std::string()), {.file = tmp_.empty() ? path_ : tmp_});
  }
  std::string path_, target_, tmp_;
  std::FILE* f_ = nullptr;
  int fd_ = -1;  // a character device or FIFO written through on commit()
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
