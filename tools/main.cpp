#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <new>

#include "commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "sam2rt: Segment Anything 2.1 (image path) in C++.\n"
      "Encode a photo once with the Hiera image encoder, then turn clicks and boxes into masks.\n"
      "Run `sam2rt <command> --help` for the options of a command."};
  app.name("sam2rt");
  app.require_subcommand(1);
  app.set_version_flag("--version", "sam2rt 0.1.0");
  sam2rt::cli::register_encode(app);
  sam2rt::cli::register_segment(app);
  sam2rt::cli::register_compare(app);
  sam2rt::cli::register_bench(app);
  sam2rt::cli::register_serve(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const sam2rt::Error& e) {
    std::fprintf(stderr, "sam2rt: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "sam2rt: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sam2rt: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
