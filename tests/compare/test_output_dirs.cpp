// The output directories of train/compare/profile: what a start made is what a refused start
// takes back, the lock is on the file at the path, and outputs do not nest in each other.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/run_files.hpp"
#include "core/errors.hpp"
#include "io/created_directories.hpp"
#include "io/directory_lock.hpp"
#include "io/output_kind.hpp"

namespace fs = std::filesystem;
using namespace nnvmc;

TEST(OutputDirectories, OnlyTheDirectoriesACallMadeAreTakenBackAndOnlyWhileEmpty) {
  const std::string top = test::fresh_dir("nnvmc_created_dirs");
  fs::create_directories(top);
  std::error_code ec;
  auto made = io::CreatedDirectories::create(top + "/a/b/", ec);  // (a trailing '/')
  ASSERT_FALSE(ec);
  ASSERT_EQ(made.made.size(), 2u);
  EXPECT_TRUE(fs::is_directory(top + "/a/b"));
  made.remove_if_empty();
  EXPECT_FALSE(fs::exists(top + "/a"));
  EXPECT_TRUE(fs::exists(top));  // it was there before
  // through a symbolic link and '..', as the system resolves the path: deep/y/z, not lnk's parent
  fs::create_directories(top + "/deep/er");
  fs::create_directory_symlink(top + "/deep/er", top + "/lnk");
  made = io::CreatedDirectories::create(top + "/lnk/../y/z", ec);
  ASSERT_FALSE(ec);
  EXPECT_TRUE(fs::is_directory(top + "/deep/y/z"));
  std::ofstream(top + "/deep/y/kept") << "someone else's\n";
  made.remove_if_empty();
  EXPECT_FALSE(fs::exists(top + "/deep/y/z"));
  EXPECT_TRUE(fs::exists(top + "/deep/y/kept"));  // not empty: stays with its directory
  EXPECT_TRUE(io::CreatedDirectories::create(top + "/deep", ec).made.empty());  // existed
  fs::remove_all(top);
}

// A refused start removes the lock file it made while holding it; a process that locked the
// file just then must not count as holding the directory: the lock is on the file at the path.
TEST(OutputDirectories, ALockFileRemovedWhileHeldIsNotTheDirectorysLock) {
  const std::string dir = test::fresh_dir("nnvmc_lock_removed");
  fs::create_directories(dir);
  {
    io::DirectoryLock first(dir, "output");
    fs::remove(fs::path(dir) / io::kLockFileName);
    io::DirectoryLock second(dir, "output");  // (the file at the path is new and free)
    EXPECT_TRUE(fs::exists(fs::path(dir) / io::kLockFileName));
    try {
      io::DirectoryLock third(dir, "output");
      ADD_FAILURE() << "two processes hold the directory's lock";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("is in use by another nnvmc process"), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(OutputDirectories, AnOutputAnywhereBelowAComparisonIsNamedButItsOwnDirectoryIsNot) {
  const std::string cmp = test::fresh_dir("nnvmc_enclosing");
  fs::create_directories(cmp);
  std::ofstream(cmp + "/compare.csv") << "cell\n";
  EXPECT_NE(io::enclosing_output(cmp + "/cells/x/y").find("comparison (compare.csv) in '" + cmp + "'"),
            std::string::npos);
  EXPECT_EQ(io::enclosing_output(cmp + "/"), "");  // itself, with a trailing '/'
  EXPECT_EQ(io::enclosing_output(cmp), "");
  fs::remove_all(cmp);
}
