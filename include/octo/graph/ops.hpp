// All typed ops of the graph DSL, one header each under octo/graph/ops/. Each op checks its shape rule
// at compile time where extents are static, and when the graph is built where they are dynamic.
#pragma once

#include "octo/graph/ops/argmax.hpp"
#include "octo/graph/ops/attention.hpp"
#include "octo/graph/ops/elementwise.hpp"
#include "octo/graph/ops/embed.hpp"
#include "octo/graph/ops/gemv.hpp"
#include "octo/graph/ops/kv_append.hpp"
#include "octo/graph/ops/norm.hpp"
#include "octo/graph/ops/rope.hpp"
