#include "suggestions.h"

#include <algorithm>
#include <numeric>

namespace sam2rt::cli {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
    }
  }
  return row[b.size()];
}

std::string did_you_mean(const std::string& typed, const std::vector<std::string>& candidates) {
  const auto best = closest_name(typed, candidates);
  return best ? "; did you mean '" + *best + "'?" : "";
}

std::vector<std::string> long_option_names(const CLI::App& command) {
  std::vector<std::string> names = {"--help"};
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

}  // namespace

std::optional<std::string> closest_name(const std::string& typed, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = 0;
  for (const std::string& candidate : candidates) {
    const size_t distance =
        candidate.size() > typed.size() && candidate.compare(0, typed.size(), typed) == 0 && typed.size() >= 3
            ? 1
            : edit_distance(typed, candidate);
    if (!best || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  if (best && best_distance <= std::max<size_t>(2, typed.size() / 3)) return best;
  return std::nullopt;
}

namespace {

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    commands.push_back(sub->get_name());
  }
  return commands;
}

// The index of the first argument that is not a global flag (--help, --version), or argc.
int first_command_word(int argc, const char* const* argv) {
  int i = 1;
  while (i < argc && std::string(argv[i]).rfind("-", 0) == 0) ++i;
  return i;
}

}  // namespace

std::optional<std::string> explain_unknown_command(const CLI::App& app, int argc, const char* const* argv) {
  const int word = first_command_word(argc, argv);
  if (word == argc) return std::nullopt;
  const std::string typed = argv[word];
  const std::vector<std::string> commands = command_names(app);
  if (std::find(commands.begin(), commands.end(), typed) != commands.end()) return std::nullopt;
  return "unknown command '" + typed + "'" + did_you_mean(typed, commands) + " (see `sam2rt --help`)";
}

std::optional<std::string> explain_unknown_name(const CLI::App& app, int argc, const char* const* argv) {
  if (auto unknown = explain_unknown_command(app, argc, argv)) return unknown;
  const int word = first_command_word(argc, argv);
  if (word == argc) return std::nullopt;
  const CLI::App* command = app.get_subcommand(argv[word]);
  const std::vector<std::string> options = long_option_names(*command);
  for (int i = word + 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.rfind("--", 0) != 0) continue;  // values, positionals, negative numbers
    const std::string name = arg.substr(0, arg.find('='));
    if (std::find(options.begin(), options.end(), name) == options.end()) {
      return "unknown option '" + name + "' for `sam2rt " + command->get_name() + "`" + did_you_mean(name, options) +
             " (see `sam2rt " + command->get_name() + " --help`)";
    }
  }
  return std::nullopt;
}

}  // namespace sam2rt::cli
