// The one way octo's Vulkan sources include Vulkan-Hpp (also their precompiled header). Private to
// octo_core: no public header includes this.
#pragma once

#ifndef VULKAN_HPP_DISPATCH_LOADER_DYNAMIC
#define VULKAN_HPP_DISPATCH_LOADER_DYNAMIC 1
#endif
#include <vulkan/vulkan.hpp>
#include <vulkan/vulkan_raii.hpp>
