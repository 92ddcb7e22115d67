// SPDX-License-Identifier: Apache-2.0
// A key-value store in a directory, for tests of loomCommInitRankStore: a stand-in for the
// store a framework shares (PyTorch's FileStore works the same way). Every key is a file; a
// value appears whole (written to a temporary name, then renamed); `add` holds an flock on a
// lock file. Works across forked processes and threads alike.
#pragma once

#include <loom.h>

#include <string>

namespace loom::test {

class FileStore {
 public:
  explicit FileStore(std::string directory);  // the directory must exist
  // The callbacks Loom calls; valid while this object lives.
  const loomStore_t* callbacks() const { return &callbacks_; }
  const std::string& directory() const { return directory_; }

 private:
  std::string directory_;
  loomStore_t callbacks_;
};

// A fresh, empty directory under $TMPDIR (or /tmp) for one test's store, removed with
// everything in it when this object dies (forked children _exit and leave it alone).
class StoreDirectory {
 public:
  explicit StoreDirectory(const std::string& testName);
  ~StoreDirectory();
  StoreDirectory(const StoreDirectory&) = delete;
  StoreDirectory& operator=(const StoreDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace loom::test
