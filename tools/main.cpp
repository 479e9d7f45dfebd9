#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <sstream>
#include <string>

#include "commands.h"
#include "api/process_memory.h"
#include "core/error.h"
#include "io/image_too_large.h"
#include "engine_environment.h"
#include "suggestions.h"

namespace {

// Usage errors (unknown option, missing required option, a value CLI11's
// checks refuse) exit with 2, like most Unix tools; everything else with 1.
constexpr int kUsageError = 2;

// Every failure ends in exactly one line on stderr, even when the message
// quotes a file name or text that holds control characters.
int report_error(const std::string& message, int exit_code) {
  std::string line = message;
  for (char& c : line) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  std::fprintf(stderr, "sam2rt: error: %s\n", line.c_str());
  return exit_code;
}

// `sam2rt --help` lists each command in one line: the first line of its
// description. The rest of the description is for `sam2rt <command> --help`.
class OneLinePerCommand : public CLI::Formatter {
 public:
  std::string make_subcommand(const CLI::App* command) const override {
    const std::string& description = command->get_description();
    std::stringstream out;
    CLI::detail::format_help(out, command->get_display_name(), description.substr(0, description.find('\n')),
                             get_column_width());
    return out.str();
  }
};

}  // namespace

int main(int argc, char** argv) {
  sam2rt::cli::restart_with_engine_environment(argc, argv);
  // A batch frees and allocates its per-prompt buffers again and again.
  sam2rt::keep_freed_memory_in_process();
  CLI::App app{
      "sam2rt: Segment Anything 2.1 (image path) in C++.\n"
      "Encode a photo once with the Hiera image encoder, then turn clicks and boxes into masks.\n"
      "Run `sam2rt <command> --help` for the options of a command."};
  app.name("sam2rt");
  app.formatter(std::make_shared<OneLinePerCommand>());
  app.require_subcommand(1);
  app.set_version_flag("--version", "sam2rt 0.1.0");
  sam2rt::cli::register_encode(app);
  sam2rt::cli::register_segment(app);
  sam2rt::cli::register_track(app);
  sam2rt::cli::register_everything(app);
  sam2rt::cli::register_compare(app);
  sam2rt::cli::register_bench(app);
  sam2rt::cli::register_serve(app);
  sam2rt::cli::register_download(app);
  // Before parsing: CLI11 would answer `sam2rt trak --help` with the top-level help and status 0.
  if (const auto unknown = sam2rt::cli::explain_unknown_command(app, argc, argv)) {
    return report_error(*unknown, kUsageError);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    // A command's own failure status (compare's mismatch), already reported.
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here too, with exit code 0.
    if (e.get_exit_code() == 0) return app.exit(e);
    if (const auto unknown = sam2rt::cli::explain_unknown_name(app, argc, argv)) {
      return report_error(*unknown, kUsageError);
    }
    const std::string help = app.get_subcommands().empty()
                                 ? "sam2rt --help"
                                 : "sam2rt " + app.get_subcommands().front()->get_name() + " --help";
    return report_error(std::string(e.what()) + " (see `" + help + "`)", kUsageError);
  } catch (const sam2rt::ImageTooLarge& e) {
    return report_error(std::string(e.what()) + " (--max-image-pixels N)", 1);
  } catch (const sam2rt::Error& e) {
    return report_error(e.what(), 1);
  } catch (const std::bad_alloc&) {
    return report_error("out of memory", 1);
  } catch (const std::exception& e) {
    return report_error(e.what(), 1);
  }
  return 0;
}
