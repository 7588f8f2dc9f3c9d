// depthbatch — where the program finds its own data (the default model, the shipped OCIO config), and how
// paths written in a job are made absolute.
//
// Data is found relative to the running executable, never through paths of the build or source tree, so an
// installed prefix can be copied or moved as a whole (README.md, "Install for a studio"; installed with docs/ beside it):
//
//   P/bin/depthbatch                                   the executable (RPATH $ORIGIN/../lib)
//   P/lib/libtorch*.so, libc10.so, ...                 LibTorch, installed beside it
//   P/share/depthbatch/models/fastdepth-nyu.pt         the default model
//   P/share/depthbatch/ocio/config.ocio                the shipped OCIO config
//   P/share/depthbatch/tools/review.py                 the review sheet's script (review.h)
//   P/share/doc/depthbatch/                            README.md, docs/ and licences
//
// The build tree mirrors it: build/share/depthbatch/{models,ocio,tools/review.py} are links into the source
// tree, made by CMake, so build/depthbatch and the test executables in build/tests/ find the same files.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace depthbatch {

/// The folder of the running executable (/proc/self/exe with links resolved). Empty if it cannot be read.
std::filesystem::path executable_dir();

/// The data folders searched for `share/depthbatch/...` files, in order: `<exe>/../share/depthbatch`
/// (an installed prefix, and the test executables in build/tests/) then `<exe>/share/depthbatch`
/// (build/depthbatch in the build tree).
std::vector<std::filesystem::path> data_dirs();

/// The first `<data dir>/<relative>` that exists; if none does, the first candidate (so that an error
/// message can name where the file was expected). `relative` is e.g. "models/fastdepth-nyu.pt".
std::filesystem::path find_data_file(const std::string& relative);

/// Make a path written in a job (or on the command line) absolute against `base`, resolving `..` on the file
/// system: `a/link/../b` goes to the parent of what `link` points at, as the kernel would, not to `a/b`
/// (checkouts and shows live behind symbolic links). The existing part of the path up to its last `..` is
/// made canonical; a path without `..` keeps its links as written (only `.` and doubled separators go),
/// so messages show the user's own paths. Never throws; a `..` over a folder that does not exist is removed
/// by text, as nothing on disk can say otherwise.
std::string resolve_user_path(const std::filesystem::path& base, const std::string& path);

}  // namespace depthbatch
