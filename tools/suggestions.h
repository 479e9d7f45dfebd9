#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace sam2rt::cli {

// The candidate closest to `typed` by edit distance (a prefix of a candidate
// counts as close), if it is close enough to be what was meant.
std::optional<std::string> closest_name(const std::string& typed, const std::vector<std::string>& candidates);

// A line naming the first word of the command line that is no command, with
// "did you mean ..." and the help to read; nullopt when that word is a command
// or there is none. Checked before parsing, so that `sam2rt trak --help` is an
// error rather than the top-level help.
std::optional<std::string> explain_unknown_command(const CLI::App& app, int argc, const char* const* argv);

// For a command line CLI11 refused: a line naming the unknown command or option
// with "did you mean ..." and the help to read; nullopt when every command and
// option on it exists (the refusal is about something else).
std::optional<std::string> explain_unknown_name(const CLI::App& app, int argc, const char* const* argv);

}  // namespace sam2rt::cli
