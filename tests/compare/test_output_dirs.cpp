// The output directories of train/compare/profile: what a start made is what a refused start
// takes back, the lock is on the file at the path, and outputs do not nest in each other.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

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

// A refused start removes the lock file it made while holding it. A process that opened that
// file just before and locks it once it is released holds a file no longer at the path, which
// locks nothing: it must lock the file at the path instead, so that a third is refused.
TEST(OutputDirectories, ALockOnALockFileRemovedMeanwhileIsTakenAgainOnTheFileAtThePath) {
  const std::string dir = test::fresh_dir("nnvmc_lock_removed");
  fs::create_directories(dir);
  const fs::path file = fs::path(dir) / io::kLockFileName;
  {
    std::optional<io::DirectoryLock> first(std::in_place, dir, "output");
    EXPECT_TRUE(first->created());
    std::optional<io::DirectoryLock> second;
    std::string second_error;
    std::thread waiting([&] {  // opens the file now, retries its lock for about 0.1 s
      try {
        second.emplace(dir, "output");
      } catch (const Error& e) {
        second_error = e.what();
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    fs::remove(file);  // as a refused start does, still holding it
    first.reset();     // released: `second` locks the removed file at its next try
    waiting.join();
    ASSERT_TRUE(second.has_value()) << second_error;
    EXPECT_TRUE(fs::exists(file));  // it locked a new file at the path
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
  // through a symbolic link to a directory inside it, and through '..' past such a link
  const std::string elsewhere = test::fresh_dir("nnvmc_enclosing_link");
  fs::create_directories(cmp + "/cells/x");
  fs::create_directories(elsewhere);
  fs::create_directory_symlink(cmp + "/cells/x", elsewhere + "/link");
  EXPECT_NE(io::enclosing_output(elsewhere + "/link/y").find("comparison (compare.csv)"), std::string::npos);
  EXPECT_NE(io::enclosing_output(elsewhere + "/link/../z").find("comparison (compare.csv)"), std::string::npos);
  EXPECT_EQ(io::enclosing_output(elsewhere + "/w"), "");
  fs::remove_all(elsewhere);
  fs::remove_all(cmp);
}
