// vkml_torch._C: the device's state and switches, for vkml_torch/__init__.py and the tests.
#include <dlfcn.h>
#include <execinfo.h>
#include <pybind11/pybind11.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <pybind11/stl.h>

#include "aten/devices.h"
#include "aten/random.h"
#include "aten/trace.h"
#include "dispatch/compare.h"
#include "dispatch/device.h"
#include "graph/op.h"
#include "util/env.h"

namespace py = pybind11;
using namespace vkml;

namespace {

Device* dev(int index = -1) { return Device::get(index < 0 ? Device::current() : index); }



// An error as the Python exception torch would raise for it (OutOfMemoryError stays catchable).
[[noreturn]] void throw_error(const Error& e) {
  py::object type;
  switch (e.code) {
    case Err::out_of_memory: type = py::module_::import("torch").attr("OutOfMemoryError"); break;
    case Err::unsupported: type = py::reinterpret_borrow<py::object>(PyExc_NotImplementedError); break;
    case Err::invalid: type = py::reinterpret_borrow<py::object>(PyExc_ValueError); break;
    case Err::index: type = py::reinterpret_borrow<py::object>(PyExc_IndexError); break;
    default: type = py::reinterpret_borrow<py::object>(PyExc_RuntimeError); break;
  }
  const bool torchs = e.code == Err::index || e.code == Err::runtime;  // torch's own message (device asserts)
  PyErr_SetString(type.ptr(), (torchs || e.msg.rfind("vkml", 0) == 0 ? e.msg : "vkml: " + e.msg).c_str());
  throw py::error_already_set();
}

void raise_if(const Result<void>& r) {
  if (!r.ok()) throw_error(r.error());
}

Device& need(int index = -1) {
  if (index >= 0 && index >= Device::device_count() && Device::device_count() > 0)
    throw_error(fail(Err::runtime, "vkml: invalid device ordinal: the device index is out of range. It must be in [0, " +
                                       std::to_string(Device::device_count()) + "), but got " + std::to_string(index) + "."));
  Device* d = dev(index);
  if (!d && Device::in_bad_fork()) {  // CUDA's wording, unprefixed (as aten raises it)
    PyErr_SetString(PyExc_RuntimeError, Device::why_unavailable().c_str());
    throw py::error_already_set();
  }
  if (!d) throw_error(fail(Err::no_device, "no Vulkan device is available: " + Device::why_unavailable(index < 0 ? 0 : index)));
  return *d;
}

template <class F>
void set_switch(F f) {
  Result<void> r;
  {
    py::gil_scoped_release nogil;
    // What every device recorded under the old switches runs first.
    for (Device* d : Device::opened_devices())
      if (r.ok()) r = d->flush();
    if (r.ok()) f(env());
  }
  raise_if(r);
}

py::list op_table() {
  py::list rows;
  auto add = [&](OpId id, std::initializer_list<const char*> overloads) {
    const OpInfo& i = op_info(id);
    py::dict r;
    r["name"] = i.name;
    r["family"] = family_name(i.family);
    r["aten"] = i.aten;
    py::list dts;
    for (DType t : {DType::u8, DType::i8, DType::i16, DType::i32, DType::i64, DType::f16, DType::f32,
                    DType::f64, DType::b8, DType::bf16})
      if (i.dtypes & bit(t)) dts.append(t == DType::b8 ? "bool" : dtype_name(t));
    r["dtypes"] = dts;
    r["tol_kind"] = tol_kind_name(i.tol.kind);
    r["tol_bound"] = i.tol.bound;
    r["tol_why"] = i.tol.why;
    py::list ov;
    for (const char* o : overloads) ov.append(o);
    r["overloads"] = ov;
    rows.append(r);
  };
#define OP(NAME, FAMILY, ATEN, OPCODE, ORACLE, DTYPES, TOL, ...) add(OpId::NAME, {__VA_ARGS__});
#include "op_rows.def"
#undef OP
  return rows;
}

// VKML_CRASH_TRACE=1: on SIGSEGV print the native stack with each frame's library and offset
// (feed them to addr2line -e <library>). A debugging aid for drivers we cannot attach a debugger to.
void crash_trace(int sig) {
  void* frames[64];
  int n = backtrace(frames, 64);
  std::fprintf(stderr, "vkml: signal %d, native stack:\n", sig);
  for (int i = 0; i < n; ++i) {
    Dl_info info{};
    if (dladdr(frames[i], &info) && info.dli_fname)
      std::fprintf(stderr, "  #%d %s +0x%lx %s\n", i, info.dli_fname,
                   (unsigned long)((char*)frames[i] - (char*)info.dli_fbase), info.dli_sname ? info.dli_sname : "");
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  if (env().crash_trace) {
    static char alt[1 << 16];  // the handler must run even when the stack overflowed
    stack_t ss{};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    sigaltstack(&ss, nullptr);
    struct sigaction sa {};
    sa.sa_handler = crash_trace;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
  }
  m.def("is_available", [] { return dev(0) != nullptr || Device::device_count() > 0; });  // (a bad fork: true, as CUDA)
  m.def("why_unavailable", [] { return Device::why_unavailable(); });
  m.def("device_count", [] { return Device::device_count(); });
  m.def("is_in_bad_fork", [] { return Device::in_bad_fork(); });
  // Whether torch device-checks an overload ("clamp_min.Tensor") before its kernel (tests).
  m.def("torch_checks_devices", [](const std::string& o) { return aten::torch_checks_devices(o.c_str()); });
  // vkml:index's position among the Vulkan devices (list_devices() order; VKML_DEVICE's with it set).
  m.def("device_index", [](int index) { return need(index).physical(); }, py::arg("index") = -1);
  m.def("current_device", [] { return Device::current(); });
  m.def("set_device", [](int index) {
    need(index);  // torch's kind of error for an absent one
    Device::set_current(index);
  });
  m.def("device_info", [](int index) {
    Device& d = need(index);
    const DeviceInfo& i = d.info();
    const Limits& l = d.limits();
    py::dict r;
    r["name"] = i.name;
    r["type"] = i.type;
    r["api_version"] = i.api_version;
    r["driver_version"] = i.driver;
    r["vendor_id"] = i.vendor_id;
    r["device_id"] = i.device_id;
    r["total_memory"] = i.memory_bytes;
    r["max_push_constants_size"] = l.max_push_constants;
    r["max_shared_memory"] = l.max_shared_memory;
    r["max_workgroup_invocations"] = l.max_workgroup_invocations;
    r["subgroup_size"] = l.subgroup_size;
    r["max_allocation"] = l.max_allocation;
    r["float64"] = l.float64;
    r["float16"] = l.float16;
    r["float_controls"] = l.float_controls;
    r["cooperative_matrix"] = l.cooperative_matrix;  // VK_KHR_cooperative_matrix with float16 in use (gemm_coop)
    r["cooperative_matrix_bf16"] = l.cooperative_matrix_bf16;  // VK_KHR_cooperative_matrix with bfloat16 (gemm_coop_bf16)
    r["cooperative_matrix_wg_bf16"] = l.cooperative_matrix_wg_bf16;
    r["cooperative_matrix_wg"] = l.cooperative_matrix_wg;  // VK_NV_cooperative_matrix2 workgroup scope (gemm_coop_wg)
    r["min_spec"] = env().min_spec;
    r["index"] = d.index();
    r["vulkan_index"] = d.physical();
    return r;
  }, py::arg("index") = -1);
  m.def("synchronize", [](int index) {
    if (Device::in_bad_fork()) need();  // raises, as torch.cuda.synchronize() does there
    if (index >= 0) need(index);
    if (Device* d = dev(index)) {
      Result<void> r;
      {
        py::gil_scoped_release nogil;
        r = d->flush();
      }
      raise_if(r);  // with the GIL: it sets the Python error
    }
  }, py::arg("index") = -1);
  m.def("stats", [](int index) {
    py::dict r;
    Stats s = dev(index) ? dev(index)->stats() : Stats{};
    r["nodes"] = s.nodes;
    r["dispatches"] = s.dispatches;
    r["submits"] = s.submits;
    r["flushes"] = s.flushes;
    r["pending"] = s.pending;
    r["checked"] = s.checked;
    r["fused"] = s.fused;
    r["fused_steps"] = s.fused_steps;
    r["fused_specialized"] = s.specialized;
    r["barriers"] = s.barriers;
    r["submit_us"] = double(s.submit_ns) / 1e3;
    r["wait_us"] = double(s.wait_ns) / 1e3;
    r["pipelines"] = s.pipelines;
    r["pipeline_cache_hits"] = s.pipeline_cache_hits;
    return r;
  }, py::arg("index") = -1);
  m.def("_save_pipeline_caches", [] {
    py::gil_scoped_release nogil;
    Device::save_pipeline_caches();
  });
  m.def("pipeline_cache", [](int index) {
    py::dict r;
    PipelineStats s = dev(index) ? dev(index)->pipeline_stats() : PipelineStats{};
    r["file"] = s.file;
    r["loaded_bytes"] = s.loaded_bytes;
    r["created"] = s.created;
    r["cache_hits"] = s.cache_hits;
    py::list made;
    for (const auto& m : s.made) {
      py::dict e;
      e["shader"] = m.shader;
      e["opcode"] = m.opcode;
      e["ms"] = m.ms;
      e["cache_hit"] = m.cache_hit;
      made.append(e);
    }
    r["made"] = made;
    return r;
  }, py::arg("index") = -1);
  m.def("memory_stats", [](int index) {
    py::dict r;
    MemoryStats s = dev(index) ? dev(index)->memory_stats() : MemoryStats{};
    r["allocated"] = s.allocated;
    r["reserved"] = s.reserved;
    r["max_allocated"] = s.max_allocated;
    return r;
  }, py::arg("index") = -1);
  m.def("empty_cache", [] {  // every device's, as torch.cuda.empty_cache()
    for (Device* d : Device::opened_devices()) d->empty_cache();
  });
  m.def("rng_manual_seed", [](uint64_t seed) { aten::rng_manual_seed(seed); });
  m.def("rng_seed", [] { return aten::rng_seed(); });
  m.def("rng_initial_seed", [] { return aten::rng_initial_seed(); });
  m.def("rng_get_state", [] { return py::bytes(aten::rng_get_state()); });
  m.def("rng_set_state", [](py::bytes b) { aten::rng_set_state(std::string(b)); });
  m.def("set_rng_mode", [](const std::string& mode) { aten::set_rng_mode(mode); });
  m.def("rng_mode", [] { return aten::rng_mode(); });
  m.def("flushes_subnormals", [](bool f64) {
    Device& d = need();
    py::gil_scoped_release nogil;
    return d.flushes_subnormals(f64 ? Compute::f64 : Compute::f32);
  });
  // Check mode's element comparison on host bytes, for the tests: 1-d values of `dtype` under the
  // tolerance of row `op`, with an optional second (flushed-input) reference. "" when they match.
  // n: the reduction length behind each element; scale: per-element scales of backward-error rows
  // (as the oracle gives them; none: |reference|).
  m.def("_compare", [](const std::string& op, const std::string& dtype, py::bytes got, py::bytes ref,
                       py::object alt, int64_t n, std::vector<double> scale) {
    const OpInfo* info = nullptr;
    for (int i = 0; i < op_count(); ++i)
      if (op == op_info(OpId(i)).name) info = &op_info(OpId(i));
    if (!info) throw std::invalid_argument("no op-table row named " + op);
    TensorDesc d;
    bool known = false;
    for (int t = 0; t <= int(DType::bf16); ++t)
      if (dtype == dtype_name(DType(t))) d.dtype = DType(t), known = true;
    if (!known) throw std::invalid_argument("unknown dtype " + dtype);
    std::string g = got, r = ref, a = alt.is_none() ? std::string() : std::string(py::bytes(alt));
    if (g.size() != r.size() || (!alt.is_none() && a.size() != r.size()) || g.size() % dtype_size(d.dtype))
      throw std::invalid_argument("_compare: byte strings of different or partial sizes");
    d.ndim = 1;
    d.sizes[0] = int64_t(g.size() / dtype_size(d.dtype));
    d.strides[0] = 1;
    auto u = [](const std::string& b) { return reinterpret_cast<const uint8_t*>(b.data()); };
    if (!scale.empty() && int64_t(scale.size()) != d.sizes[0]) throw std::invalid_argument("_compare: one scale per element");
    Mismatch m = compare(d, u(g), u(r), info->tol, compute_of(d.dtype), scale, n, alt.is_none() ? nullptr : u(a));
    if (!m.failed) return std::string();
    char buf[160];
    std::snprintf(buf, sizeof buf, ": got %.9g, expected %.9g (allowed difference %.9g)", m.got, m.expected, m.allowed);
    return m.where + buf;
  }, py::arg("op"), py::arg("dtype"), py::arg("got"), py::arg("ref"), py::arg("alt") = py::none(),
     py::arg("n") = 1, py::arg("scale") = std::vector<double>{});
  // Switches change under the device lock, after what was recorded under the old ones has run.
  m.def("set_check", [](bool on) { set_switch([on](Env& e) { e.check = on; }); });
  m.def("check_enabled", [] { return env().check; });
  m.def("set_eager", [](bool on) { set_switch([on](Env& e) { e.eager = on; }); });
  m.def("eager_enabled", [] { return env().eager; });
  // Load <blob>.spv from `path` instead of the built-in SPIR-V ("" = built-in): broken shaders
  // for the check-mode tests and scripts/mutate.py. Pipelines made before are not reused once the
  // path changes (files changed under the same path are not noticed: use a new directory).
  m.def("_set_spirv_dir", [](const std::string& path) { set_switch([path](Env& e) { e.spirv_dir = path; }); });
  m.def("_spirv_dir", [] { return env().spirv_dir; });
  m.def("set_fuse", [](bool on) { set_switch([on](Env& e) { e.fuse = on; }); });
  m.def("fuse_enabled", [] { return env().fuse; });
  // Test aid: specialized pipelines (elementwise dtypes, fused programs) once their constants came
  // n times (0: never; -1: the device's default, Limits::specialize_after), as VKML_SPECIALIZE=n.
  m.def("_set_specialize", [](int n) { set_switch([n](Env& e) { e.specialize = n < 0 ? -1 : n; }); });
  m.def("_specialize", [] { return env().specialize; });
  // Test aid: the early submission of pending matrix products past this many MFLOP (0: never;
  // -1: the device's default, Limits::submit_early_mflop), as VKML_SUBMIT_EARLY.
  m.def("_set_submit_early", [](int mflop) { set_switch([mflop](Env& e) { e.submit_early = mflop < 0 ? -1 : mflop; }); });
  // Test aid: device-to-device copies by shader (1), by vkCmdCopyBuffer (0), or the device's
  // default (-1, Limits::copy_shader), as VKML_COPY_SHADER.
  m.def("_set_copy_shader", [](int n) { set_switch([n](Env& e) { e.copy_shader = n < 0 ? -1 : n != 0; }); });
  m.def("_trace_begin", [] { aten::set_tracing(true); });
  m.def("_trace_end", [] { aten::set_tracing(false); });
  m.def("_trace_reset", [] { aten::trace_reset(); });
  m.def("_trace_decomposition", [](const std::string& op) {
    if (aten::tracing()) aten::trace(op, aten::Path::decomposition);
  });
  m.def("_trace_counts", [] {
    py::dict r;
    for (const auto& [k, n] : aten::trace_counts()) r[py::make_tuple(k.first, k.second)] = n;
    return r;
  });
  // vkml_torch.profile() (vkml_torch/_profile.py): on/off returns "" or why the device cannot
  // time; take returns ([(kernel, submission, start_ns, end_ns)], [(ticket, start_ns, end_ns)], lost).
  m.def("_profile_set", [](bool on) {
    Device& d = need();
    std::string why;
    Result<void> r;
    {
      py::gil_scoped_release nogil;
      auto s = d.set_profiling(on);
      if (s.ok()) why = s.value();
      else r = s.error();
    }
    raise_if(r);
    return why;
  });
  m.def("_profile_take", [] {
    Device& d = need();
    GpuProfile p;
    Result<void> r;
    {
      py::gil_scoped_release nogil;
      auto t = d.take_profile();
      if (t.ok()) p = std::move(t.value());
      else r = t.error();
    }
    raise_if(r);
    py::list ks, ss;
    for (const GpuKernel& k : p.kernels) ks.append(py::make_tuple(k.name, k.submission, k.start_ns, k.end_ns));
    for (const GpuSubmission& s : p.submissions) ss.append(py::make_tuple(s.ticket, s.start_ns, s.end_ns));
    return py::make_tuple(ks, ss, p.lost);
  });
  m.def("_timestamps_written", [] { return dev() ? dev()->timestamps_written() : uint64_t(0); });
  m.def("cpu_fallback_enabled", [] { return env().cpu_fallback; });
  m.def("op_table", &op_table);
}
