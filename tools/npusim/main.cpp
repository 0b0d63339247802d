// The npusim command line: main is the table of subcommands. Each subcommand's options and handler
// are in its own TU (add_<name> in run.cpp, generate.cpp, ...; options.hpp lists them), beside
// the code that runs it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "processes.hpp"
#include "npusim/version.hpp"
#include "options.hpp"

using namespace npusim;

namespace {

// The first word that is not an option (nor --threads' value) must name a subcommand; CLI11 says
// only "A subcommand is required" for a misspelt one.
std::string unknown_subcommand(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads") {
      ++i;
      continue;
    }
    if (a.starts_with("-")) continue;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      if (sub->get_name() == a) return {};
    return a;
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"npusim: compile PyTorch (torch_ir) models for a simulated NPU and run them"};
  app.set_version_flag("--version", std::string("npusim ") + version_string);
  app.require_subcommand(1);
  app.fallthrough();  // options of the whole program (--threads) also after the subcommand
  cli::TargetChoice tc;
  int threads = 0;
  app.add_option("--threads", threads, "worker threads of the cpu target and Eigen (default: all cores)")->check(cli::integer_in(1, 4096));

  // The subcommands, in the order of `npusim --help`.
  using Add = cli::Registered (*)(cli::Shared&);
  static constexpr Add subcommands[] = {cli::add_run,     cli::add_generate, cli::add_targets, cli::add_compile, cli::add_quantize, cli::add_inspect,
                                        cli::add_explain, cli::add_simulate, cli::add_ops,     cli::add_devices, cli::add_bench,    cli::add_bench_llm};
  cli::Shared shared{app, tc};
  std::vector<cli::Registered> registered;
  for (Add add : subcommands) registered.push_back(add(shared));

  if (const std::string sub = unknown_subcommand(app, argc, argv); !sub.empty()) {
    std::fprintf(stderr, "npusim: unknown subcommand '%s'; see npusim --help\n", sub.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);    // prints help/version or the usage error
    return rc == 0 ? 0 : 2;  // exit codes: 0 pass, 1 results outside tolerance, 2 bad input
  }
  try {
    {
      std::string command;
      for (const CLI::App* sub : app.get_subcommands()) command = sub->get_name();
      cli::start_processes(argc, argv, command);  // under mpirun: one pipeline stage per process
    }
    if (!tc.devices.empty() && !tc.stages_given) tc.stages = static_cast<int>(tc.devices.size());  // one stage per device
    // --interpret without --target means the reference (the only target that interprets).
    if (tc.interpret && !tc.target_given) tc.target = "reference";
    cli::check_thread_env();  // NPUSIM_THREADS: a number of threads or nothing, whichever target runs
    if (threads > 0) cli::set_cpu_threads(threads);  // the pool, OpenMP and Eigen
    // Every input the command opens is remembered; an output onto one of them is refused by the
    // writer (AtomicFile), whichever option names it (`compile ir.json -o ir.json`).
    refuse_outputs_onto_inputs();
    if (cli::stage_link() && tc.interpret)
      throw Error(ErrorCode::unsupported, "under mpirun, npusim runs compiled programs (one stage per process); --interpret runs the IR in one",
                  {.found = "--interpret"});
    int rc = 0;
    for (const cli::Registered& r : registered)
      if (*r.app) {
        rc = r.run();
        break;
      }
    cli::stop_processes();
    return rc;
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", e.what());
    if (cli::stage_link()) cli::abort_processes(2);
    return 2;
  } catch (const std::bad_alloc&) {
    // Sizes are checked before allocating (docs/robustness.md); this is memory the machine ran out of.
    std::fflush(stdout);
    std::fprintf(stderr, "npusim resource error: out of memory (the machine could not provide an allocation; a smaller model, batch or --threads may fit)\n");
    if (cli::stage_link()) cli::abort_processes(2);
    return 2;
  } catch (const std::exception& e) {
    // Every failure npusim knows of is an npusim::Error; anything else is a bug in npusim.
    std::fflush(stdout);
    std::fprintf(stderr, "npusim internal error: an unexpected exception escaped (%s); please report it with the command line\n", e.what());
    if (cli::stage_link()) cli::abort_processes(2);
    return 2;
  }
  return 0;
}
