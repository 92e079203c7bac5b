# The Conan 2 recipe for octo: builds the CMake project from this checkout (no Conan requirements: the
# system's nlohmann-json, Vulkan headers, glslc and PCRE2 are found by CMake) and describes the package
# as the components octo::headers and octo::core, aggregated as octo::octo.
import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir

required_conan_version = ">=2.0"


class OctoConan(ConanFile):
    name = "octo"
    description = "Transformer inference on any Vulkan GPU: a C++20 task-DAG IR, a graph DSL, a reference VM and a Vulkan VM"
    # The repository has no LICENSE file yet; set this when the owners choose one.
    license = "unspecified"
    topics = ("llm", "vulkan", "inference", "transformer")
    package_type = "library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"shared": [True, False], "fPIC": [True, False]}
    default_options = {"shared": False, "fPIC": True}

    def _root(self):
        # The recipe lives in <checkout>/conan; the project is the folder above it.
        return os.path.join(self.recipe_folder, "..")

    def set_version(self):
        text = load(self, os.path.join(self._root(), "CMakeLists.txt"))
        match = re.search(r"project\(\s*octo\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", text)
        if not match:
            raise Exception("conanfile.py: no 'project(octo VERSION x.y.z' in CMakeLists.txt")
        self.version = match.group(1)

    def export_sources(self):
        # Only what the library build needs: no tests, examples, benchmarks, build trees or packaging.
        root = self._root()
        for pattern in ("CMakeLists.txt", "LICENSE*", "cmake/*", "include/*", "src/*", "shaders/*"):
            copy(self, pattern, src=root, dst=self.export_sources_folder)

    def config_options(self):
        if self.settings.os == "Windows":
            del self.options.fPIC

    def configure(self):
        if self.options.shared:
            self.options.rm_safe("fPIC")

    def validate(self):
        check_min_cppstd(self, 20)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["OCTO_BUILD_TESTS"] = False
        tc.cache_variables["OCTO_BUILD_EXAMPLES"] = False
        tc.cache_variables["OCTO_BUILD_BENCHMARKS"] = False
        tc.cache_variables["OCTO_BUILD_TOOLS"] = False
        tc.cache_variables["OCTO_WARNINGS_AS_ERRORS"] = False  # a newer compiler's new warnings must not break the package
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        copy(self, "LICENSE*", src=self.source_folder, dst=os.path.join(self.package_folder, "licenses"))
        CMake(self).install()
        # Conan's CMakeDeps describes the package; the project's own CMake config stays out of it.
        rmdir(self, os.path.join(self.package_folder, "lib", "cmake"))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "octo")
        self.cpp_info.set_property("cmake_target_name", "octo::octo")

        headers = self.cpp_info.components["headers"]
        headers.set_property("cmake_target_name", "octo::headers")
        headers.includedirs = ["include"]
        headers.libdirs = []
        headers.bindirs = []

        core = self.cpp_info.components["core"]
        core.set_property("cmake_target_name", "octo::core")
        core.libs = ["octo_core"]
        core.requires = ["headers"]
        if self.settings.os in ("Linux", "FreeBSD"):
            core.system_libs = ["pthread", "dl", "m"]
            if not self.options.shared:
                # PCRE2 is a private dependency of the core, found on the system when octo was built; a
                # static core carries it into the consumer's link line. (The Vulkan loader is dlopen'ed
                # and the SPIR-V is embedded: nothing of Vulkan is linked.)
                core.system_libs.insert(0, "pcre2-8")
                # zstd likewise (compressed layer files of decomposed models); xxHash is header-only.
                core.system_libs.insert(1, "zstd")
