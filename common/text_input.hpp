#pragma once
// The small text files the programs take as input (a backward profile, a machine description):
// read whole, after checking that the path names a regular file of sensible size, so that a
// device (/dev/zero, /dev/full), a pipe or a folder given by mistake is bad input, not a read
// that never ends or a line that grows until memory runs out.
#include <cstddef>
#include <string>

namespace sb {

// The file's text. Throws UsageError "cannot read WHAT 'PATH': <reason>" when it is missing,
// unreadable, not a regular file, or larger than max_bytes.
std::string read_text_input(const std::string& path, const std::string& what, size_t max_bytes = size_t{64} << 20);

}  // namespace sb
