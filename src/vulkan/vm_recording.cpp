// Recording and running: a program's command buffer (dispatches, the barriers the plan asks for, the
// profiling timestamps), recorded once; its submits (fence or timeline) and the per-task GPU times.
#include <map>
#include <set>
#include <span>

#include "vm_impl.hpp"

namespace octo::vm {

using namespace octo::vm::vulkan;

std::vector<std::vector<vulkan_vm::impl::task_copies>> vulkan_vm::impl::weight_copies_for(program_state& ps) {
  std::vector<std::vector<task_copies>> address(ps.instances.size());
  const char* knob_c = std::getenv("OCTO_WEIGHT_COPIES");
  const std::string_view knob = knob_c ? knob_c : "";
  if (!knob.empty() && knob != "0" && knob != "1")
    throw octo::error("octo: OCTO_WEIGHT_COPIES must be 0 or 1, not '" + std::string(knob) + "'");
  struct wanted {
    std::uint32_t instance = 0;
    std::int32_t task = 0;
    std::size_t slot = 0;  // its index in the launch's weight_copies
    std::string name;      // the copy's
    weight_copy_request request;
    std::uint64_t weight_bytes = 0;
    bool weight_written = false;
  };
  std::vector<wanted> wants;
  const bool fast = options.precision == matmul_precision::fast;
  for (std::uint32_t i = 0; i < ps.instances.size(); ++i) {
    const auto& is = ps.instances[i];
    const auto& p = is.program;
    address[i].assign(p.tasks.size(), task_copies{});
    if (knob == "0") continue;
    std::vector<std::uint64_t> addresses(p.buffers.size());
    for (std::size_t b = 0; b < p.buffers.size(); ++b) addresses[b] = is.buffers[b].address;
    for (const auto& t : p.tasks) {
      if (t.op == ir::opcode::nop || !kernel_for(t.op).planner) continue;
      std::vector<weight_copy_request> requests;
      for (const bool f16 : {fast, !fast}) {  // a gated program records both precisions' kernels
        task_context ctx{p, t, addresses, globals.address, dev->facts(), f16};
        try {
          requests = kernel_for(t.op).planner(ctx).weight_copies;
        } catch (const octo::error&) {
          // The task's error is reported where record() plans it.
        }
        if (!requests.empty() || !options.control_words) break;
      }
      if (requests.size() > kMaxWeightCopies) throw octo::error("octo: a launch asked for more weight copies than kMaxWeightCopies");
      for (std::size_t k = 0; k < requests.size(); ++k)
        // The weight: a WEIGHT buffer shared by name in the heap (a region's contents change under it).
        for (const auto b : t.inputs) {
          const auto& pl = is.buffers[static_cast<std::size_t>(b)];
          const auto& buf = p.buffers[static_cast<std::size_t>(b)];
          const auto sb = shared.find(buf.name.view());
          if (pl.address != requests[k].weight || buf.kind != ir::buffer_kind::weight ||
              std::string_view(pl.binding) != "heap" || sb == shared.end() || sb->second.a.address != pl.address)
            continue;
          wants.push_back({i, t.id, k, weight_copy_name(buf.name.view()), requests[k], pl.bytes, sb->second.written});
          break;
        }
    }
  }
  std::uint64_t need = 0;
  std::set<std::string_view> counted;
  for (const auto& w : wants)
    if (!shared.contains(w.name) && counted.insert(w.name).second) need += w.request.bytes();
  if (need > 0 && knob != "1") {
    const memory_statistics m = memory->stats();
    if (m.in_use >= m.budget || need > (m.budget - m.in_use) / 4) return address;
  }
  std::vector<shared_buffer*> made;
  bool room = true;  // an allocation that fails (a fragmented heap) ends the new copies: their tasks keep the scratch
  for (const auto& w : wants) {
    auto it = shared.find(w.name);
    if (it == shared.end()) {
      if (!room) continue;
      shared_buffer sb;
      try {
        sb.a = memory->allocate(w.name, w.request.bytes(), memory_class::device_local);
      } catch (const octo::error&) {
        room = false;
        continue;
      }
      sb.bytes = w.request.bytes();
      sb.kind = ir::buffer_kind::weight;
      sb.fill = plan_weight_copy(w.request, sb.a.address);
      sb.source = w.request.weight;
      sb.source_bytes = w.weight_bytes;
      sb.stale = true;
      it = shared.emplace(w.name, std::move(sb)).first;
      if (w.weight_written) made.push_back(&it->second);
    }
    address[w.instance][static_cast<std::size_t>(w.task)][w.slot] = it->second.a.address;
    if (std::find(ps.weight_copies.begin(), ps.weight_copies.end(), w.name) == ps.weight_copies.end())
      ps.weight_copies.push_back(w.name);
  }
  // Filled now where the weight was written (a program added after its weights were written, as the
  // runtime's prefill programs are, then runs its first pass without the fill); else by the weight's
  // first write (write_placed), or before the first run if none comes.
  if (!made.empty()) fill_weight_copies(made);
  return address;
}

void vulkan_vm::impl::push_constants(const vk::raii::CommandBuffer& cb, const kernel_launch& l) {
  if (l.push_constants.bytes.empty()) return;
  std::vector<std::byte> pc = l.push_constants.bytes;
  pc.resize((pc.size() + 3) / 4 * 4, std::byte{0});
  cb.pushConstants<std::byte>(*pipes->layout(), vk::ShaderStageFlagBits::eCompute, 0, pc);
}

void vulkan_vm::impl::record_launch(const vk::raii::CommandBuffer& cb, const kernel_launch& l) {
  cb.bindPipeline(vk::PipelineBindPoint::eCompute, pipes->get(l.shader, l.spec_constants));
  push_constants(cb, l);
  cb.dispatch(l.groups[0], l.groups[1], l.groups[2]);
}

void vulkan_vm::impl::refresh_weight_copies(const program_state& ps) {
  std::vector<shared_buffer*> stale;
  for (const auto& n : ps.weight_copies)
    if (auto it = shared.find(n); it != shared.end() && it->second.stale) stale.push_back(&it->second);
  if (!stale.empty()) fill_weight_copies(stale);
}

void vulkan_vm::impl::fill_weight_copies(std::span<shared_buffer* const> copies) {
  one_shot(
      [&](const vk::raii::CommandBuffer& cb) {
        for (const shared_buffer* sb : copies) record_launch(cb, *sb->fill);
      },
      "filling the weights' f16 copies");
  for (shared_buffer* sb : copies) sb->stale = false;
}

std::vector<std::vector<vulkan_vm::impl::scratch_parts>> vulkan_vm::impl::shared_scratch_for(
    program_state& ps, const std::vector<std::vector<barrier_step>>& steps,
    const std::vector<std::vector<task_copies>>& copies) {
  // Each task's ask (planned once without the scratch), laid end to end within its wavefront: the tasks
  // of one wavefront run together, so each gets its own part (one part for every task asking with the
  // same kernel_launch::shared_scratch_key); wavefronts reuse the same memory.
  constexpr std::uint64_t none = ~std::uint64_t{0};
  std::vector<std::vector<std::uint64_t>> offset(ps.instances.size()), transient(ps.instances.size());
  std::uint64_t need = 0;
  const bool fast = options.precision == matmul_precision::fast;
  constexpr std::uint64_t align = 256;
  for (std::size_t i = 0; i < ps.instances.size(); ++i) {
    const auto& p = ps.instances[i].program;
    std::vector<std::uint64_t> addresses(p.buffers.size());
    for (std::size_t b = 0; b < p.buffers.size(); ++b) addresses[b] = ps.instances[i].buffers[b].address;
    offset[i].assign(p.tasks.size(), none);
    transient[i].assign(p.tasks.size(), none);
    std::uint64_t used = 0;  // by the wavefront so far
    // The wavefront's shared parts by key: offset and size.
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>, std::less<>> keyed;
    for (const auto& step : steps[i]) {
      if (step.barrier_before) {
        used = 0;
        keyed.clear();
      }
      const auto& t = p.tasks[static_cast<std::size_t>(step.task)];
      if (t.op == ir::opcode::nop || !kernel_for(t.op).planner) continue;
      std::uint64_t ask = 0, ask_transient = 0;
      std::string key;  // a part shared by key only where every precision's kernel names the same one
      bool keyed_ok = true;
      for (const bool f16 : {fast, !fast}) {  // a gated program records both precisions' kernels
        task_context ctx{p, t, addresses, globals.address, dev->facts(), f16};
        ctx.weight_copy_address = copies[i][static_cast<std::size_t>(t.id)];
        try {
          const kernel_launch l = kernel_for(t.op).planner(ctx);
          if (l.shared_scratch_bytes > 0) {
            if (ask > 0 && l.shared_scratch_key != key) keyed_ok = false;
            key = l.shared_scratch_key;
          }
          ask = std::max(ask, l.shared_scratch_bytes);
          ask_transient = std::max(ask_transient, l.transient_scratch_bytes);
        } catch (const octo::error&) {
          // The task's error is reported where record() plans it.
        }
        if (!options.control_words) break;
      }
      if (ask_transient > 0) {
        transient[i][static_cast<std::size_t>(t.id)] = used;
        used += (ask_transient + align - 1) / align * align;
        need = std::max(need, used);
      }
      if (ask == 0) continue;
      if (!keyed_ok) key.clear();
      if (!key.empty()) {
        if (const auto k = keyed.find(key); k != keyed.end() && k->second.second == ask) {
          offset[i][static_cast<std::size_t>(t.id)] = k->second.first;
          continue;
        }
        keyed.emplace(key, std::pair{used, ask});
      }
      offset[i][static_cast<std::size_t>(t.id)] = used;
      used += (ask + align - 1) / align * align;
      need = std::max(need, used);
    }
  }
  std::vector<std::vector<scratch_parts>> address(ps.instances.size());
  for (std::size_t i = 0; i < ps.instances.size(); ++i) address[i].assign(offset[i].size(), scratch_parts{});
  if (need == 0) return address;
  static constexpr std::string_view prefix = "#shared scratch ";  // '#' is in no IR buffer name
  std::string name;
  shared_buffer* found = nullptr;
  for (auto& [n, sb] : shared)
    if (n.starts_with(prefix) && sb.bytes >= need && (!found || sb.bytes < found->bytes)) {
      found = &sb;
      name = n;
    }
  if (!found) {
    // Only where a quarter of the free budget covers it: a faster prefill must not take the memory a
    // budget-limited (streamed) run needs for its layers.
    const memory_statistics m = memory->stats();
    if (m.in_use >= m.budget || need > (m.budget - m.in_use) / 4) return address;
    name = std::string(prefix) + std::to_string(need);
    shared_buffer sb;
    sb.a = memory->allocate(name, need, memory_class::device_local);
    sb.bytes = need;
    sb.kind = ir::buffer_kind::activation;
    found = &shared.emplace(name, sb).first->second;
  }
  ++found->users;
  ps.instances.front().shared_names.push_back(name);
  for (std::size_t i = 0; i < ps.instances.size(); ++i)
    for (std::size_t t = 0; t < offset[i].size(); ++t) {
      if (offset[i][t] != none) address[i][t].shared = found->a.address + offset[i][t];
      if (transient[i][t] != none) address[i][t].transient = found->a.address + transient[i][t];
    }
  return address;
}

void vulkan_vm::impl::record(program_state& ps) {
  const auto& facts = dev->facts();
  std::uint64_t barriers = 0, dispatches = 0, task_dispatches = 0, exclusive_dispatches = 0, indirect_dispatches = 0;
  const bool indirect_on = env_indirect();
  bool dirty = false;  // a dispatch since the last barrier
  vk::Pipeline bound;
  try {
    vk::raii::CommandBuffers cbs(dev->logical(),
                                 vk::CommandBufferAllocateInfo(*pool, vk::CommandBufferLevel::ePrimary, 1));
    ps.cb = std::move(cbs[0]);
  } catch (...) {
    rethrow_vulkan("allocating the program's command buffer");
  }
  auto& cb = ps.cb;

  auto barrier = [&] {
    if (!dirty) return;
    vk::MemoryBarrier mb(vk::AccessFlagBits::eShaderWrite, vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
    cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eComputeShader, {}, mb, {}, {});
    ++barriers;
    dirty = false;
  };
  allocation indirect_args;  // VkDispatchIndirectCommand per indirect launch, written by vm_dispatch_size
  // `slot`: the launch's index among the program's indirect launches (-1: a direct dispatch).
  auto dispatch = [&](const kernel_launch& l, const std::string& who, std::int32_t slot = -1) {
    if (l.shader.empty() || l.groups[0] == 0 || l.groups[1] == 0 || l.groups[2] == 0) return false;
    if (l.push_constants.bytes.size() > pipes->push_constant_bytes())
      throw octo::error("octo: " + who + ": " + std::to_string(l.push_constants.bytes.size()) +
                        " bytes of push constants, more than the " + std::to_string(pipes->push_constant_bytes()) +
                        " the pipeline layout has");
    vk::Pipeline pl = pipes->get(l.shader, l.spec_constants);
    if (pl != bound) {
      cb.bindPipeline(vk::PipelineBindPoint::eCompute, pl);
      bound = pl;
    }
    push_constants(cb, l);
    if (slot >= 0) {
      cb.dispatchIndirect(indirect_args.buffer, indirect_args.offset + 12 * static_cast<std::uint64_t>(slot));
      ++indirect_dispatches;
    } else {
      cb.dispatch(l.groups[0], l.groups[1], l.groups[2]);
    }
    ++dispatches;
    dirty = true;
    return true;
  };

  std::vector<allocation> scratch;  // kernels' scratch buffers, zero-filled once recorded
  ps.slots.clear();
  ps.profiled_run = false;
  std::uint32_t query_capacity = 0;
  if (profiling) {
    for (const auto& is : ps.instances) query_capacity += 2 * static_cast<std::uint32_t>(is.program.tasks.size());
    query_capacity = std::max<std::uint32_t>(query_capacity, 2);
    try {
      ps.queries =
          vk::raii::QueryPool(dev->logical(), vk::QueryPoolCreateInfo({}, vk::QueryType::eTimestamp, query_capacity));
    } catch (...) {
      rethrow_vulkan("creating the profiling query pool");
    }
  }

  // Every task is planned before anything is recorded: the indirect launches' rules must be known
  // before the kernel that sizes them, which runs first. With control words (vulkan_options::
  // control_words) a task may record several launches: every launch of a layer's task is gated by the
  // layer's skip word, a GEMM whose kernel depends on the precision is recorded for both precisions,
  // each gated by the precision word, and a layer that can be bypassed gets a copy of its input to its
  // output, run only while it is skipped (recorded beside its first task: the input is ready there, and
  // the next layer reads the output only after the layer's last task).
  struct planned_launch {
    kernel_launch launch;
    std::int32_t slot = -1;  // index among the indirect launches
    bool vm_own = false;     // the VM's bypass copy, not the task's kernel
    bool before = false;     // one of the task kernel's `before` launches (recorded ahead of the wavefront)
    // A kernel of the task for other positions (an alternative) or for the other precision: of a task's
    // main kernel and its exclusive ones, one runs a step (the others' group counts are 0).
    bool exclusive = false;
  };
  struct planned {
    std::vector<planned_launch> launches;
    std::string who;
  };
  // A task's launches in order, for the profiled recording (task by task): a `before` launch writes
  // the shared scratch that another task's kernel may still be reading (the barrier before it), and the
  // task's kernels read what it wrote (the barrier after the last one).
  const auto for_launches = [&](const std::vector<planned_launch>& launches, const auto& each) {
    bool after_before = false;
    for (const auto& l : launches) {
      if (l.before || after_before) barrier();
      after_before = l.before;
      each(l);
    }
  };
  std::vector<std::vector<barrier_step>> steps(ps.instances.size());  // per instance: plan_barriers
  std::vector<std::vector<planned>> plans(ps.instances.size());       // per instance, one per step
  std::vector<std::uint32_t> rules;  // indirect_rule_words per indirect launch
  const std::uint32_t n_inst = static_cast<std::uint32_t>(ps.instances.size());
  const bool gated = options.control_words;
  // A launch that needs its group count from the device: its rule (a fixed count if it has none) with `gate`.
  const auto make_indirect = [&](planned_launch& pl, const dispatch_gate& gate, const std::string& who) {
    kernel_launch& l = pl.launch;
    if (l.shader.empty() || l.groups[0] == 0 || l.groups[1] == 0 || l.groups[2] == 0) return;
    if (const auto& r = l.indirect) {
      // A planner's mistake here would dispatch past the work or miss some: refuse it by name.
      if (r->div == 0 || r->min > r->max || r->mul == 0 || std::uint64_t{r->mul} * r->max != l.groups[0] ||
          l.groups[0] > 65535)
        throw octo::error("octo: " + who + ": an indirect group count needs div > 0, min <= max and groups.x = "
                          "mul x max <= 65535 (div " + std::to_string(r->div) + ", min " + std::to_string(r->min) +
                          ", max " + std::to_string(r->max) + ", mul " + std::to_string(r->mul) + ", groups.x " +
                          std::to_string(l.groups[0]) + ")");
    }
    const bool has_gate = gate.layer >= 0 || gate.precision != 0;
    if (!has_gate && (!l.indirect || !indirect_on)) return;  // a direct dispatch (of the largest count)
    // The planner's rule, or (none, or OCTO_INDIRECT=0) the fixed largest count: clamp(ceil(n), g, g) = g.
    indirect_groups r;
    if (l.indirect && indirect_on) r = *l.indirect;
    else r.min = r.max = l.groups[0];
    pl.slot = static_cast<std::int32_t>(rules.size() / indirect_rule_words);
    const auto words = indirect_rule_record(r, l.groups, gate);
    rules.insert(rules.end(), words.begin(), words.end());
  };
  for (std::uint32_t i = 0; i < n_inst; ++i) steps[i] = plan_barriers(ps.instances[i].program);
  const auto copies = weight_copies_for(ps);                          // per instance, per task
  const auto shared_scratch = shared_scratch_for(ps, steps, copies);  // per instance, per task
  // A launch's `before` kernels go first into the task's list, with its gate (recorded ahead of the
  // wavefront's kernels, or task by task when profiling: for_launches).
  const auto push_before = [&](planned& pl, planned_launch& owner, const dispatch_gate& gate) {
    for (auto& b : owner.launch.before) {
      planned_launch pb;
      pb.launch = std::move(b);
      pb.before = true;
      make_indirect(pb, gate, pl.who + " (before " + std::string(owner.launch.shader) + ")");
      pl.launches.push_back(std::move(pb));
    }
    owner.launch.before.clear();
  };
  for (std::uint32_t i = 0; i < n_inst; ++i) {
    auto& is = ps.instances[i];
    const auto& p = is.program;
    std::vector<std::uint64_t> addresses(p.buffers.size());
    for (std::size_t b = 0; b < p.buffers.size(); ++b) addresses[b] = is.buffers[b].address;
    std::vector<std::uint64_t> task_scratch(p.tasks.size(), 0);  // task_context::task_scratch_address
    // Control words: each task's layer span, and the spans' first tasks (where a bypass copy goes).
    std::vector<std::int32_t> span_of(p.tasks.size(), -1);
    std::vector<ir::layer_span> spans;
    if (gated) {
      spans = ir::layer_spans(p);
      for (std::size_t s = 0; s < spans.size(); ++s) {
        if (spans[s].layer >= static_cast<std::int32_t>(layer_control_words))
          throw octo::error("octo: control words: layer " + std::to_string(spans[s].layer) + " is past the " +
                            std::to_string(layer_control_words) + " layers they gate");
        for (const auto id : spans[s].tasks) span_of[static_cast<std::size_t>(id)] = static_cast<std::int32_t>(s);
        ps.gated_layers.emplace_back(spans[s].layer, spans[s].input >= 0);
      }
    }
    for (const auto& step : steps[i]) {
      const auto& t = p.tasks[static_cast<std::size_t>(step.task)];
      planned pl;
      pl.who = "task " + std::to_string(t.id) + " (" + std::string(ir::name(t.op)) + ")";
      if (n_inst > 1) pl.who = "instance " + std::to_string(i) + " " + pl.who;
      if (t.op != ir::opcode::nop) {
        const kernel_row& kernel = kernel_for(t.op);
        if (!kernel.planner)
          throw octo::error("octo: " + pl.who + ": no Vulkan kernel: " + std::string(kernel.no_kernel));
        const kernel_planner planner = kernel.planner;
        const bool fast = options.precision == matmul_precision::fast;
        task_context ctx{p, t, addresses, globals.address, facts, fast};
        ctx.shared_scratch_address = shared_scratch[i][static_cast<std::size_t>(t.id)].shared;
        ctx.transient_scratch_address = shared_scratch[i][static_cast<std::size_t>(t.id)].transient;
        ctx.weight_copy_address = copies[i][static_cast<std::size_t>(t.id)];
        if (!gated) ctx.task_scratch_address = task_scratch;
        planned_launch main;
        main.launch = planner(ctx);
        if (main.launch.scratch_bytes > 0) {  // the kernel's own scratch, freed with the program; plan again with it
          auto a = memory->allocate(pl.who + " scratch", main.launch.scratch_bytes, memory_class::device_local);
          is.owned.push_back(a);
          scratch.push_back(a);
          ctx.scratch_address = a.address;
          task_scratch[static_cast<std::size_t>(t.id)] = a.address;
          main.launch = planner(ctx);
        }
        const std::int32_t s = span_of[static_cast<std::size_t>(t.id)];
        dispatch_gate gate;
        gate.layer = s >= 0 ? spans[static_cast<std::size_t>(s)].layer : -1;
        gate.instance = i;
        std::optional<planned_launch> other;  // the other precision's kernel, where it differs
        if (gated && !main.launch.shader.empty()) {
          // The other precision's kernel shares the task's scratch (ctx's): one of the two runs a step,
          // and a kernel's scratch holds that step's state only (the head-norm GEMVs' counters and sums).
          task_context octx = ctx;
          octx.fast_precision = !fast;
          planned_launch o;
          o.launch = planner(octx);
          if (o.launch.scratch_bytes <= main.launch.scratch_bytes && !same_launch(o.launch, main.launch)) other = std::move(o);
        }
        dispatch_gate main_gate = gate;
        if (other) main_gate.precision = fast ? precision_gate_fast : precision_gate_accurate;
        auto alternatives = std::move(main.launch.alternatives);
        auto beside = std::move(main.launch.beside);
        push_before(pl, main, main_gate);
        make_indirect(main, main_gate, pl.who);
        pl.launches.push_back(std::move(main));
        for (auto& b : beside) {  // the task's other kernels of this wavefront, run with the main one
          planned_launch a;
          a.launch = std::move(b);
          if (!a.launch.before.empty() || !a.launch.alternatives.empty())
            throw octo::error("octo: " + pl.who + ": a kernel beside the task's own has no `before` or alternatives");
          make_indirect(a, main_gate, pl.who + " (beside " + std::string(a.launch.shader) + ")");
          pl.launches.push_back(std::move(a));
        }
        if (indirect_on)  // the planner's other kernels for the task, each for its own range of positions
          for (auto& alt : alternatives) {
            planned_launch a;
            a.launch = std::move(alt);
            if (!a.launch.indirect)
              throw octo::error("octo: " + pl.who + ": an alternative kernel needs an indirect rule (its positions)");
            make_indirect(a, main_gate, pl.who + " (alternative " + std::string(a.launch.shader) + ")");
            a.exclusive = true;
            pl.launches.push_back(std::move(a));
          }
        if (other) {
          dispatch_gate g = gate;
          g.precision = fast ? precision_gate_accurate : precision_gate_fast;
          auto other_beside = std::move(other->launch.beside);
          push_before(pl, *other, g);
          make_indirect(*other, g, pl.who + " (the other precision)");
          other->exclusive = true;
          pl.launches.push_back(std::move(*other));
          for (auto& b : other_beside) {
            planned_launch a;
            a.launch = std::move(b);
            make_indirect(a, g, pl.who + " (the other precision, beside)");
            a.exclusive = true;
            pl.launches.push_back(std::move(a));
          }
        }
        if (s >= 0 && spans[static_cast<std::size_t>(s)].tasks.front() == t.id &&
            spans[static_cast<std::size_t>(s)].input >= 0) {
          const auto& span = spans[static_cast<std::size_t>(s)];
          const auto& ob = p.buffers[static_cast<std::size_t>(span.output)];
          planned_launch copy;
          copy.vm_own = true;
          copy.launch = plan_vm_copy(is.buffers[static_cast<std::size_t>(span.input)].address,
                                     is.buffers[static_cast<std::size_t>(span.output)].address,
                                     static_cast<std::uint64_t>(ob.numel()));
          dispatch_gate g = gate;
          g.when_skipped = true;
          make_indirect(copy, g, "the bypass of layer " + std::to_string(span.layer));
          pl.launches.push_back(std::move(copy));
        }
      }
      plans[i].push_back(std::move(pl));
    }
  }
  const auto n_indirect = static_cast<std::uint32_t>(rules.size() / indirect_rule_words);
  allocation indirect_rules;
  if (n_indirect > 0) {  // freed with the program (instance 0's allocations)
    indirect_rules = memory->allocate("indirect dispatch rules", rules.size() * 4, memory_class::host_visible);
    ps.instances.front().owned.push_back(indirect_rules);
    std::memcpy(indirect_rules.mapped, rules.data(), rules.size() * 4);
    indirect_args = memory->allocate("indirect dispatch arguments", std::uint64_t{n_indirect} * 12,
                                     memory_class::device_local);
    ps.instances.front().owned.push_back(indirect_args);
  }

  try {
    // Simultaneous use: submit() may queue the same program again before its last run finished.
    cb.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eSimultaneousUse));
    if (profiling) cb.resetQueryPool(*ps.queries, 0, query_capacity);
    // Host writes (IO, globals record, control), transfers and earlier programs' kernels -> kernels. With
    // indirect launches also the last run's reads of the arguments -> this run's vm_dispatch_size writes.
    {
      vk::MemoryBarrier mb(
          vk::AccessFlagBits::eHostWrite | vk::AccessFlagBits::eTransferWrite | vk::AccessFlagBits::eShaderWrite,
          vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
      auto src = vk::PipelineStageFlagBits::eHost | vk::PipelineStageFlagBits::eTransfer |
                 vk::PipelineStageFlagBits::eComputeShader;
      if (n_indirect > 0) src |= vk::PipelineStageFlagBits::eDrawIndirect;
      cb.pipelineBarrier(src, vk::PipelineStageFlagBits::eComputeShader, {}, mb, {}, {});
    }
    if (n_indirect > 0) {
      // The group counts of this position, then one barrier that makes them visible to every indirect
      // dispatch below (their command reads are in its second scope, whichever barriers come between).
      dispatch(plan_vm_dispatch_size(indirect_rules.address, indirect_args.address, globals.address, control.address,
                                   layer_control.address, n_indirect),
               "the indirect dispatch sizes");
      vk::MemoryBarrier mb(vk::AccessFlagBits::eShaderWrite, vk::AccessFlagBits::eIndirectCommandRead |
                                                                 vk::AccessFlagBits::eShaderRead |
                                                                 vk::AccessFlagBits::eShaderWrite);
      cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                         vk::PipelineStageFlagBits::eDrawIndirect | vk::PipelineStageFlagBits::eComputeShader, {}, mb,
                         {}, {});
      ++barriers;
      dirty = false;
    }
    for (std::uint32_t i = 0; i < n_inst; ++i) {
      auto& is = ps.instances[i];
      const auto& p = is.program;
      if (i > 0) barrier();  // R31 was written by the message kernel
      std::size_t wave_end = 0;  // steps [wavefront start, wave_end) are the wavefront being recorded
      for (std::size_t k = 0; k < steps[i].size(); ++k) {
        const barrier_step& step = steps[i][k];
        const auto& t = p.tasks[static_cast<std::size_t>(step.task)];
        const planned& pl = plans[i][k];
        if (step.barrier_before) barrier();
        if (k >= wave_end && !profiling) {
          // A wavefront's `before` launches first, all of them (each writes its own part of the shared
          // scratch), then one barrier, then its tasks' kernels together. (Profiling records task by
          // task: for_launches below.)
          wave_end = k + 1;
          while (wave_end < steps[i].size() && !steps[i][wave_end].barrier_before) ++wave_end;
          // The wavefront's own barrier (or the program's opening one) already orders the scratch's
          // last readers before these writes. Identical ones (tasks sharing a part by key) go once.
          bool any_before = false;
          std::vector<const planned_launch*> recorded_before;
          const auto same_gate = [&](std::int32_t a, std::int32_t b) {
            if (a < 0 || b < 0) return a == b;
            const auto at = [&](std::int32_t s) {
              return rules.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(s) * indirect_rule_words);
            };
            return std::equal(at(a), at(a + 1), at(b));
          };
          for (std::size_t j = k; j < wave_end; ++j)
            for (const auto& l : plans[i][j].launches) {
              if (!l.before) continue;
              if (std::any_of(recorded_before.begin(), recorded_before.end(), [&](const planned_launch* r) {
                    return same_launch(r->launch, l.launch) && same_gate(r->slot, l.slot);
                  }))
                continue;
              recorded_before.push_back(&l);
              any_before = dispatch(l.launch, plans[i][j].who, l.slot) || any_before;
            }
          if (any_before) barrier();
        }
        if (t.op == ir::opcode::nop) continue;
        const std::string& who = pl.who;
        const bool any = std::any_of(pl.launches.begin(), pl.launches.end(),
                                     [](const planned_launch& l) { return !l.launch.shader.empty(); });
        if (profiling && any) {
          // Serialized: the barrier makes the first stamp the end of everything before this task.
          barrier();
          profile_slot slot;
          slot.task = t.id;
          slot.instance = i;
          slot.opcode = std::string(ir::name(t.op));
          if (!t.outputs.empty()) slot.output = p.buffers[static_cast<std::size_t>(t.outputs.front())].name.str();
          slot.query = static_cast<std::uint32_t>(ps.slots.size());
          cb.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *ps.queries, 2 * slot.query);
          bool dispatched = false;
          for_launches(pl.launches, [&](const planned_launch& l) {
            if (dispatch(l.launch, who, l.slot) && !l.vm_own && !l.before) {
              ++task_dispatches;
              if (l.exclusive) ++exclusive_dispatches;
              dispatched = true;
            }
          });
          cb.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *ps.queries, 2 * slot.query + 1);
          if (dispatched) ps.slots.push_back(std::move(slot));
          continue;
        }
        for (const auto& l : pl.launches)
          if (!l.before && dispatch(l.launch, who, l.slot) && !l.vm_own) {
            ++task_dispatches;
            if (l.exclusive) ++exclusive_dispatches;
          }
      }
      // seeds/000: after each instance, the regulator observes its outbox, then the message passes on.
      auto r30 = is.by_name.find("R30");
      std::uint32_t n = r30 != is.by_name.end()
                            ? static_cast<std::uint32_t>(p.buffers[static_cast<std::size_t>(r30->second)].numel())
                            : options.register_floats - 4;
      if (r30 != is.by_name.end()) {
        barrier();
        dispatch(plan_vm_regulator(register_address(i, 30), metrics.address, control.address, n, i, n_inst,
                                   options.regulator == regulator_mode::regulate, options.target_norm, facts),
                 "the regulator");
      }
      if (i + 1 < n_inst) {
        barrier();
        dispatch(plan_vm_message(register_address(i, 30), register_address(i + 1, 31), control.address, n, i + 1),
                 "the message from instance " + std::to_string(i));
      }
    }
    // Layer statistics: every layer output of every instance, observed once the last task is done.
    if (options.observe_layers) {
      std::vector<std::uint32_t> table;
      for (std::uint32_t i = 0; i < n_inst; ++i) {
        const auto& is = ps.instances[i];
        for (const auto& lo : ir::layer_outputs(is.program)) {
          const auto& b = is.program.buffers[static_cast<std::size_t>(lo.buffer)];
          const std::uint64_t address = is.buffers[static_cast<std::size_t>(lo.buffer)].address;
          table.insert(table.end(), {static_cast<std::uint32_t>(address), static_cast<std::uint32_t>(address >> 32),
                                     static_cast<std::uint32_t>(b.numel()), static_cast<std::uint32_t>(lo.layer)});
          ps.observed_layers.push_back(lo.layer);
        }
      }
      if (!ps.observed_layers.empty()) {
        const auto records = static_cast<std::uint32_t>(ps.observed_layers.size());
        ps.observe_table = memory->allocate("layer statistics table", table.size() * 4, memory_class::host_visible);
        std::memcpy(ps.observe_table.mapped, table.data(), table.size() * 4);
        const std::uint64_t ring_bytes = std::uint64_t{layer_stats_slots} * records * 16;
        ps.observe_ring = memory->allocate("layer statistics ring", ring_bytes, memory_class::readback);
        std::memset(ps.observe_ring.mapped, 0, ring_bytes);
        std::uint64_t most = 0;  // values of the largest record
        for (std::size_t r = 0; r < ps.observed_layers.size(); ++r) most = std::max<std::uint64_t>(most, table[4 * r + 2]);
        const std::uint32_t chunks = observe_chunks(most);
        ps.observe_partials = memory->allocate("layer statistics partials", (std::uint64_t{records} * chunks * 3 + records) * 4,
                                               memory_class::device_local);
        scratch.push_back(ps.observe_partials);  // zero-filled below: the counters start at 0
        barrier();
        dispatch(plan_vm_observe(ps.observe_table.address, ps.observe_ring.address, globals.address,
                                 ps.observe_partials.address, records, layer_stats_slots, chunks, facts),
                 "the layer observer");
      }
    }
    // Kernels -> host reads of host-visible memory, later transfers and the next program's kernels.
    vk::MemoryBarrier mb(vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eShaderRead,
                         vk::AccessFlagBits::eHostRead | vk::AccessFlagBits::eTransferRead |
                             vk::AccessFlagBits::eTransferWrite);
    cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader,
                       vk::PipelineStageFlagBits::eHost | vk::PipelineStageFlagBits::eTransfer, {}, mb, {}, {});
    cb.end();
    zero(scratch, false);
  } catch (const octo::error&) {
    throw;
  } catch (...) {
    rethrow_vulkan("recording the program's command buffer");
  }
  ps.barriers = barriers;
  ps.dispatches = dispatches;
  ps.task_dispatches = task_dispatches;
  ps.exclusive_dispatches = exclusive_dispatches;
  ps.indirect_dispatches = indirect_dispatches;
  ++st.recordings;
}

std::uint64_t vulkan_vm::impl::submit(program_id id, std::uint64_t after_upload) {
  need_timeline("submit");
  auto& ps = program(id, "submit");
  if (after_upload > transfer_value)
    throw octo::error("octo: vulkan_vm::submit: after_upload " + std::to_string(after_upload) + " but only " +
                      std::to_string(transfer_value) + " uploads were submitted");
  if (pending) {  // a fence-path execute that timed out
    wait(fence, "the previous execute");
    pending = false;
  }
  refresh_weight_copies(ps);
  const std::uint64_t signal = compute_value + 1;
  try {
    const vk::CommandBuffer cb = *ps.cb;
    submit_on_timelines(dev->compute_queue(), {&cb, 1}, *transfer_timeline, after_upload, *compute_timeline, signal);
  } catch (const vk::DeviceLostError&) {
    lost = true;
    throw octo::error("octo: the Vulkan device was lost submitting program " + std::to_string(id));
  } catch (...) {
    rethrow_vulkan("submitting a program");
  }
  compute_value = signal;
  ++st.submits;
  ++ps.submits;
  ps.profiled_run = profiling;
  last_run = id;
  return signal;
}

void vulkan_vm::impl::execute(program_id id) {
  auto& ps = program(id, "execute");
  if (timeline()) {
    finish_pending();  // host-visible memory written before this pass must not race an older one
    const auto v = submit(id, 0);
    wait_timeline(compute_timeline, v, "execute");
    compute_seen = v;
    return;
  }
  finish_pending();
  refresh_weight_copies(ps);
  try {
    dev->logical().resetFences({*fence});
    vk::CommandBuffer cb = *ps.cb;
    dev->compute_queue().submit(vk::SubmitInfo({}, {}, cb), *fence);
  } catch (const vk::DeviceLostError&) {
    lost = true;
    throw octo::error("octo: the Vulkan device was lost submitting the program");
  } catch (...) {
    rethrow_vulkan("submitting the program");
  }
  ++st.submits;
  ++ps.submits;
  pending = true;
  ps.profiled_run = profiling;
  last_run = id;
  wait(fence, "execute");
  pending = false;
}

std::vector<layer_stats> vulkan_vm::impl::observed_stats(program_id id, std::uint32_t position) {
  const auto& ps = program(id, "layer_statistics");
  std::vector<layer_stats> out;
  if (ps.observed_layers.empty()) return out;
  const std::size_t records = ps.observed_layers.size();
  const std::byte* slot = ps.observe_ring.mapped + (position % layer_stats_slots) * records * 16;
  out.resize(records);
  for (std::size_t r = 0; r < records; ++r) {
    std::uint32_t w[4];
    std::memcpy(w, slot + r * 16, 16);
    out[r].layer = ps.observed_layers[r];
    std::memcpy(&out[r].rms, &w[0], 4);
    std::memcpy(&out[r].max_abs, &w[1], 4);
    out[r].non_finite = w[2];
    out[r].values = w[3];
  }
  return out;
}

std::vector<task_profile> vulkan_vm::impl::profile(program_id id) {
  std::vector<task_profile> out;
  auto& ps = program(id, "profile");
  if (!profiling || !ps.profiled_run || ps.slots.empty()) return out;
  finish_pending();
  const auto n = static_cast<std::uint32_t>(2 * ps.slots.size());
  std::vector<std::uint64_t> ticks;
  try {
    auto r = ps.queries.getResults<std::uint64_t>(0, n, n * sizeof(std::uint64_t), sizeof(std::uint64_t),
                                                  vk::QueryResultFlagBits::e64 | vk::QueryResultFlagBits::eWait);
    ticks = std::move(r.second);
  } catch (...) {
    rethrow_vulkan("reading the profiling timestamps");
  }
  out.reserve(ps.slots.size());
  for (const auto& s : ps.slots) {
    const std::uint64_t a = ticks[2 * s.query] & timestamp_mask, b = ticks[2 * s.query + 1] & timestamp_mask;
    task_profile tp;
    tp.task = s.task;
    tp.instance = s.instance;
    tp.opcode = s.opcode;
    tp.output = s.output;
    tp.microseconds = static_cast<double>((b - a) & timestamp_mask) * ns_per_tick / 1000.0;
    out.push_back(std::move(tp));
  }
  return out;
}

}  // namespace octo::vm
