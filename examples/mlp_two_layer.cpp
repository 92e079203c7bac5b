// A two-layer MLP written by hand as a task-DAG program, proven valid at compile time, then run on the
// CPU reference VM and checked against a float64 computation of the same network.
//
//                  W1 [16 x 8], b1 [16]                         W2 [4 x 16], b2 [4]
//                 ┌──────────────────────┐
//   x [1 x 8] ──┬─► GEMV_TILE#0  cols 0-7  ─┐
//               │                           ├─► counter "fc1" ─► GELU#2 ─► GEMV_TILE#3 ─► y [1 x 4]
//               └─► GEMV_TILE#1  cols 8-15 ─┘   (2 producers;    h -> a     cols 0-3
//                                                GELU waits >= 2)
//
// The two tiles of the first layer write disjoint columns of one buffer and signal one shared counter;
// the GELU waits for the count to reach 2, i.e. for both tiles (docs/ir.md §3.2, the all-join rule).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <octo.hpp>

namespace {

constexpr std::int64_t in_dim = 8, hidden_dim = 16, out_dim = 4, tile = hidden_dim / 2;

/// The program as a constexpr function: the same code builds it for static_assert and for the VM.
constexpr octo::ir::program make_program() {
  using namespace octo::ir;
  program p;
  p.set_meta("model", "mlp_two_layer");
  const auto x = p.add_buffer("x", buffer_kind::io_input, dtype::f32, {1, in_dim});
  const auto w1 = p.add_buffer("fc1.weight", buffer_kind::weight, dtype::f32, {hidden_dim, in_dim}, "fc1.weight");
  const auto b1 = p.add_buffer("fc1.bias", buffer_kind::weight, dtype::f32, {hidden_dim}, "fc1.bias");
  const auto h = p.add_buffer("h", buffer_kind::activation, dtype::f32, {1, hidden_dim});
  const auto a = p.add_buffer("a", buffer_kind::activation, dtype::f32, {1, hidden_dim});
  const auto w2 = p.add_buffer("fc2.weight", buffer_kind::weight, dtype::f32, {out_dim, hidden_dim}, "fc2.weight");
  const auto b2 = p.add_buffer("fc2.bias", buffer_kind::weight, dtype::f32, {out_dim}, "fc2.bias");
  const auto y = p.add_buffer("y", buffer_kind::io_output, dtype::f32, {1, out_dim});

  const auto fc1 = p.add_counter("fc1: both tiles written");
  const auto act = p.add_counter("gelu done");
  const auto fc2 = p.add_counter("fc2 done");

  for (std::int64_t i = 0; i < 2; ++i) {
    task t;
    t.op = opcode::gemv_tile;
    t.inputs = {x, w1, b1};
    t.outputs = {h};
    t.out_counter = fc1;
    t.params.set(param_key::K, in_dim).set(param_key::N_tile, tile).set(param_key::n_off, i * tile);
    t.label = i == 0 ? "fc1 tile 0" : "fc1 tile 1";
    p.add_task(t);
  }
  task g;
  g.op = opcode::gelu;
  g.inputs = {h};
  g.outputs = {a};
  g.out_counter = act;
  g.waits = {{fc1, 2}};
  g.label = "gelu";
  p.add_task(g);
  task t2;
  t2.op = opcode::gemv_tile;
  t2.inputs = {a, w2, b2};
  t2.outputs = {y};
  t2.out_counter = fc2;
  t2.waits = {{act, 1}};
  t2.params.set(param_key::K, hidden_dim).set(param_key::N_tile, out_dim).set(param_key::n_off, 0);
  t2.label = "fc2";
  p.add_task(t2);
  return p;
}

// Proven at compile time: no deadlock, no race, every read has a producer.
static_assert(octo::validate(make_program()).ok, "the hand-written MLP schedule must validate");

/// Deterministic, readable weights: small sines, so every run prints the same numbers.
std::vector<float> weights(std::size_t n, double phase) {
  std::vector<float> w(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = static_cast<float>(0.5 * std::sin(0.7 * static_cast<double>(i) + phase));
  return w;
}

void print_vector(const char* name, const std::vector<float>& v) {
  std::printf("  %-3s = [", name);
  for (std::size_t i = 0; i < v.size(); ++i) std::printf("%s%+.6f", i ? ", " : "", static_cast<double>(v[i]));
  std::printf("]\n");
}

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: mlp_two_layer [--help]\n"
               "\n"
               "Builds a two-layer MLP (8 -> 16 -> GELU -> 4) as an octo task-DAG program, proves it\n"
               "valid at compile time (static_assert(octo::validate(make_program()).ok)), runs it on the\n"
               "CPU reference VM with fixed weights and input, and prints the input, the output and how\n"
               "far the output is from a float64 computation of the same network.\n");
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    }
    std::fprintf(stderr, "mlp_two_layer: unknown argument '%s'\n\n", argv[i]);
    usage(stderr);
    return 2;
  }
  try {
    const auto program = make_program();
    const auto check = octo::validate(program);
    std::printf("octo %s: a two-layer MLP on the CPU reference VM\n\n", std::string(octo::version()).c_str());
    std::printf("proved at compile time: static_assert(octo::validate(make_program()).ok)\n");
    std::printf("%s\n", check.report().str().c_str());

    octo::vm::reference_vm vm(program);
    const auto w1 = weights(hidden_dim * in_dim, 0.0), b1 = weights(hidden_dim, 1.0);
    const auto w2 = weights(out_dim * hidden_dim, 2.0), b2 = weights(out_dim, 3.0);
    std::vector<float> x(in_dim);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(-1.0 + 2.0 * static_cast<double>(i) / (in_dim - 1));
    vm.write("fc1.weight", w1);
    vm.write("fc1.bias", b1);
    vm.write("fc2.weight", w2);
    vm.write("fc2.bias", b2);
    vm.write("x", x);
    vm.run();
    const auto y = vm.read_f32("y");

    std::printf("firing order:");
    for (auto id : vm.last_order())
      std::printf("  %s#%d (%s)", std::string(octo::ir::name(program.tasks[std::size_t(id)].op)).c_str(), id,
                  program.tasks[std::size_t(id)].label.str().c_str());
    std::printf("\n\n");
    print_vector("x", x);
    print_vector("y", y);

    // The same network in float64, written out plainly.
    double worst = 0.0;
    std::vector<double> a(hidden_dim);
    for (std::size_t n = 0; n < std::size_t(hidden_dim); ++n) {
      double acc = b1[n];
      for (std::size_t k = 0; k < std::size_t(in_dim); ++k) acc += double(w1[n * in_dim + k]) * x[k];
      a[n] = 0.5 * acc * (1.0 + std::erf(acc / std::sqrt(2.0)));
    }
    for (std::size_t n = 0; n < std::size_t(out_dim); ++n) {
      double acc = b2[n];
      for (std::size_t k = 0; k < std::size_t(hidden_dim); ++k) acc += double(w2[n * hidden_dim + k]) * a[k];
      worst = std::max(worst, std::fabs(acc - double(y[n])));
    }
    std::printf("\nmax |y - float64 reference| = %.3g %s\n", worst, worst < 1e-5 ? "(ok)" : "(MISMATCH)");
    return worst < 1e-5 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlp_two_layer: %s\n", e.what());
    return 1;
  }
}
