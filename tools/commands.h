#pragma once

#include <CLI/CLI.hpp>

namespace sam2rt::cli {

// Each subcommand registers its options and a callback that does the work.
// Callbacks throw sam2rt::Error for anything the user can fix.
void register_encode(CLI::App& app);
void register_segment(CLI::App& app);
void register_track(CLI::App& app);
void register_everything(CLI::App& app);
void register_compare(CLI::App& app);
void register_bench(CLI::App& app);
void register_serve(CLI::App& app);
void register_download(CLI::App& app);

}  // namespace sam2rt::cli
