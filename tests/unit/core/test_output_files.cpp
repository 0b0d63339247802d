// Output paths that are not regular files, and outputs onto inputs (issue 39, class 3): AtomicFile,
// the one writer, never renames over a device, FIFO, symlink or directory, and refuses to replace a
// file the process read. Also printable() (class 7): what every message and listing of names from
// files passes through.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "../../common/test_util.hpp"
#include "npusim/core/file.hpp"
#include "npusim/core/printable.hpp"

using namespace npusim;
using npusim::test::TempDir;

namespace {

bool is_char_device(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

std::size_t files_in(const std::filesystem::path& dir) {
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()));
}

}  // namespace

TEST(OutputFiles, CharacterDevicesAreWrittenThroughNeverReplaced) {
  ASSERT_TRUE(is_char_device("/dev/null"));
  write_file_atomic("/dev/null", "through the device");
  EXPECT_TRUE(is_char_device("/dev/null"));
  TempDir d;
  const std::string link = d.file("null_link");
  std::filesystem::create_symlink("/dev/null", link);
  AtomicFile f(link);
  f.write("0123456789");
  f.patch(2, "xx");  // patching works: the bytes wait in a temporary file until commit()
  f.commit();
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_TRUE(is_char_device("/dev/null"));
  EXPECT_EQ(files_in(d.path()), 1u);  // no temporary file beside the link
}

TEST(OutputFiles, SymlinkToARegularFileReplacesItsTargetAndStaysALink) {
  TempDir d;
  const std::string target = d.file("real.txt"), link = d.file("link.txt");
  test::write_text(target, "old");
  std::filesystem::create_symlink(target, link);
  write_file_atomic(link, "new");
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(test::read_text(target), "new");
  std::filesystem::create_symlink(d.file("nothing_here"), d.file("dangling"));
  NPUSIM_EXPECT_ERROR(write_file_atomic(d.file("dangling"), "x"), "npusim io error", "dangling: the output path is a symlink to nothing",
                      "found a dangling symlink");
  EXPECT_FALSE(std::filesystem::exists(d.file("nothing_here")));
}

TEST(OutputFiles, FifoWithoutAReaderIsRefusedAtOnceAndWithOneIsWrittenThrough) {
  TempDir d;
  const std::string fifo = d.file("out.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  NPUSIM_EXPECT_ERROR(write_file_atomic(fifo, "x"), "npusim io error", "out.fifo: the output is a FIFO that no process is reading");
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    char buf[64];
    for (::ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
  });
  // The reader opens the FIFO when it is scheduled: try until it has.
  for (int i = 0;; ++i) {
    try {
      write_file_atomic(fifo, "through the pipe");
      break;
    } catch (const Error&) {
      ASSERT_LT(i, 2000) << "the reader never opened the FIFO";
      ::usleep(1000);
    }
  }
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(OutputFiles, DirectoriesAndSocketsAreRefusedByName) {
  TempDir d;
  NPUSIM_EXPECT_ERROR(write_file_atomic(d.path().string(), "x"), "the output path is a directory");
  std::filesystem::create_symlink(d.path(), d.file("dir_link"));
  NPUSIM_EXPECT_ERROR(write_file_atomic(d.file("dir_link"), "x"), "dir_link: the output path is a directory");
  EXPECT_TRUE(std::filesystem::is_symlink(d.file("dir_link")));
}

TEST(OutputFiles, AnOutputOntoAnInputIsRefusedNamingBoth) {
  TempDir d;
  const std::string in = d.file("ir.json");
  test::write_text(in, "{}");
  (void)read_file(in);  // not remembered: the library does not refuse by default
  write_file_atomic(in, "{}");
  std::filesystem::create_hard_link(in, d.file("hard.json"));  // after the rename: the same inode as ir.json now
  std::filesystem::create_symlink(in, d.file("soft.json"));
  refuse_outputs_onto_inputs();
  (void)read_file(in);
  NPUSIM_EXPECT_ERROR(write_file_atomic(in, "x"), "npusim io error", "ir.json: the output would replace an input of this command",
                      "expected an output path other than the inputs");
  NPUSIM_EXPECT_ERROR(write_file_atomic(d.file("hard.json"), "x"), "hard.json: the output would replace an input of this command, read as ",
                      "ir.json");
  NPUSIM_EXPECT_ERROR(write_file_atomic(d.file("soft.json"), "x"), "soft.json", "read as ");
  write_file_atomic(d.file("other.json"), "fine");
  EXPECT_EQ(test::read_text(in), "{}");
  refuse_outputs_onto_inputs(false);
  write_file_atomic(in, "now allowed");
  EXPECT_EQ(test::read_text(in), "now allowed");
}

TEST(Printable, EscapesControlsC1BidiAndInvalidUtf8) {
  EXPECT_EQ(printable("resnet18.layer1"), "resnet18.layer1");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80");
  EXPECT_EQ(printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(printable("a\nb\tc\rd\x7f"), "a\\nb\\tc\\rd\\x7f");
  EXPECT_EQ(printable("a\nb", true), "a\nb");
  EXPECT_EQ(printable(std::string_view("nul\0", 4)), "nul\\x00");
  EXPECT_EQ(printable("\xc2\x9b" "2J"), "\\u009b2J");               // C1 CSI
  EXPECT_EQ(printable("\xe2\x80\xae" "txt.exe"), "\\u202etxt.exe");  // right-to-left override
  EXPECT_EQ(printable("\xff\xc3(\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80"), "\\xff\\xc3(\\xc0\\xaf\\xed\\xa0\\x80\\xf4\\x90\\x80\\x80");
  EXPECT_EQ(printable("cut \xe4\xbd"), "cut \\xe4\\xbd");
}

TEST(Printable, ErrorMessagesEscapeNamesFromFiles) {
  const Error e(ErrorCode::graph, "input '\x1b]0;title\x07' is missing", {.file = "/tmp/\x1b[2Jx.json", .node = "n\x9b", .tensor = "t\n"});
  const std::string w = e.what();
  EXPECT_EQ(w.find('\x1b'), std::string::npos) << w;
  EXPECT_EQ(w.find('\x07'), std::string::npos) << w;
  EXPECT_EQ(w.find('\n'), std::string::npos) << w;
  EXPECT_NE(w.find("/tmp/\\x1b[2Jx.json: node 'n\\x9b': tensor 't\\n': input '\\x1b]0;title\\x07' is missing"), std::string::npos) << w;
  EXPECT_EQ(e.context().node, "n\x9b");  // the raw name stays available to programs
}
