// The OpenCL target's entry in the CLI's registry (built with the OpenCL component), and its devices
// (`npusim devices`).
#include "npusim/opencl.hpp"
#include "npusim/target/opencl/device.hpp"
#include "npusim/target/opencl/mma.hpp"
#include "cli.hpp"
#include "targets.hpp"

namespace npusim::cli {

TargetEntry opencl_target_entry() {
  return {"opencl", "OpenCL C kernels on an OpenCL device (NPUSIM_OPENCL_DEVICE; see `npusim devices`)",
          [] { return describe_target<OpenCLTarget>(); }, executor_for<OpenCLTarget>::factory(), &implementations_for<OpenCLTarget>::of,
          "NPUSIM_OPENCL_SKIP", [](const ExecutorOptions& o) { return executor_for<OpenCLTarget>::factory(o); }};
}

std::string opencl_device_description(const std::string& selector) { return ocl::select_device(selector).describe(); }
double opencl_copy_bandwidth_gbs() { return ocl::copy_bandwidth_gbs(*ocl::open_device()); }

int cmd_devices() {
  auto devs = ocl::list_devices();
  if (devs.empty()) std::printf("no OpenCL devices (no OpenCL driver installed?)\n");
  std::string chosen;
  if (!devs.empty()) chosen = ocl::select_device().name;
  for (const auto& d : devs) {
    std::printf("%zu  %-40s %-34s %-9s %3u CUs  %6.1f GiB  driver %s  %s%s\n", d.index, d.name.c_str(), d.platform_name.c_str(), d.gpu ? "GPU" : "CPU/other",
                d.compute_units, static_cast<double>(d.global_mem) / (1u << 30), d.driver.c_str(), d.c_version.c_str(),
                d.name == chosen ? "  (default)" : "");
    std::string path;
    try {
      path = ocl::mma_support(*ocl::open_device(std::to_string(d.index))).why;
    } catch (const Error& e) {
      path = std::string("unusable: ") + e.what();
    }
    std::printf("   matrix kernels: %s\n", path.c_str());
  }
  std::printf("choose with NPUSIM_OPENCL_DEVICE=<index or name substring> or --device\n");
  return 0;
}

}  // namespace npusim::cli
