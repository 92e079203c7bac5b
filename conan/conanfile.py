# The Conan 2 recipe for octo: builds the CMake project from this checkout and describes the package as
# the components octo::headers and octo::core, aggregated as octo::octo.
#
# Requirements use ConanCenter's names, with version ranges that hold both ConanCenter's versions and
# the ones Debian 12 ships, so the same recipe builds against ConanCenter packages or, through a
# profile's [platform_requires] / [platform_tool_requires] (conan/profiles/debian12), against the
# system's (docs/packaging.md).
import os
import re
import textwrap

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.build import supported_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir, save

required_conan_version = ">=2.0.9"


class OctoConan(ConanFile):
    name = "octo"
    description = "Transformer inference on any Vulkan GPU: a C++20 task-DAG IR, a graph DSL, a reference VM and a Vulkan VM"
    license = "MIT"
    homepage = "https://github.com/octo-authors/octo"
    url = homepage
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
            raise ConanInvalidConfiguration("conanfile.py: no 'project(octo VERSION x.y.z' in CMakeLists.txt")
        self.version = match.group(1)

    def export_sources(self):
        # Only what the library build needs: no tests, examples, benchmarks, build trees or packaging.
        root = self._root()
        for pattern in ("CMakeLists.txt", "LICENSE", "cmake/*", "include/*", "src/*", "shaders/*"):
            copy(self, pattern, src=root, dst=self.export_sources_folder)

    def config_options(self):
        if self.settings.os == "Windows":
            del self.options.fPIC

    def configure(self):
        if self.options.shared:
            self.options.rm_safe("fPIC")

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        # All private to octo_core (no public header includes them). A static core's consumers link
        # PCRE2 and zstd; nlohmann_json and the Vulkan headers are header-only, and xxHash is used
        # header-only (XXH_INLINE_ALL).
        self.requires("nlohmann_json/[>=3.10 <4]")
        self.requires("pcre2/[>=10.42 <11]")
        self.requires("zstd/[>=1.5 <2]")
        self.requires("xxhash/[>=0.8.1 <0.9]")
        self.requires("vulkan-headers/[>=1.3.239 <2]")

    def build_requirements(self):
        # glslc compiles the shaders at build time; the SPIR-V is embedded in the library.
        self.tool_requires("shaderc/[>=2023.2]")

    def validate(self):
        # octo's headers are C++20, so the compiler must know C++20. The profile's compiler.cppstd may be
        # lower: the package is always built as C++20 (see package_id) and octo::headers asks for
        # cxx_std_20 in the consumer's CMake (the build module written by package()).
        if "20" not in supported_cppstd(self):
            raise ConanInvalidConfiguration(
                f"{self.ref} needs a C++20 compiler; {self.settings.compiler} {self.settings.compiler.version} is not one")

    def package_id(self):
        # octo's CMakeLists.txt builds with CMAKE_CXX_STANDARD 20 whatever the profile says, so the
        # binary is the same for every cppstd setting: say so, and a gnu17 profile gets the C++20 binary.
        if self.info.settings.get_safe("compiler.cppstd") is not None:
            self.info.settings.compiler.cppstd = "20"

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

    @property
    def _cxx20_module(self):
        return os.path.join("lib", "cmake", "conan-official-octo-cxx20.cmake")

    def package(self):
        copy(self, "LICENSE", src=self.source_folder, dst=os.path.join(self.package_folder, "licenses"))
        CMake(self).install()
        # Conan's CMakeDeps describes the package; the project's own CMake config stays out of it.
        rmdir(self, os.path.join(self.package_folder, "lib", "cmake"))
        rmdir(self, os.path.join(self.package_folder, "share"))
        # What CMakeDeps cannot say itself: using octo's headers needs C++20.
        save(self, os.path.join(self.package_folder, self._cxx20_module), textwrap.dedent("""\
            # octo's headers are C++20: a target that links octo::headers is compiled as C++20 at least.
            if(TARGET octo::headers)
              set_property(TARGET octo::headers APPEND PROPERTY INTERFACE_COMPILE_FEATURES cxx_std_20)
            endif()
            """))

    def _from_platform(self, name):
        # A [platform_requires] dependency has no package folder: Conan knows its version only, so its
        # library is named here for the consumers' link (CMakeDeps generates nothing for it). Looked up
        # in items(): self.dependencies[name] leaves platform requirements out.
        for require, dependency in self.dependencies.items():
            if require.ref.name == name and not require.build:
                return dependency.package_folder is None
        return False

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "octo")
        self.cpp_info.set_property("cmake_target_name", "octo::octo")
        self.cpp_info.set_property("cmake_build_modules", [self._cxx20_module])

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
            # The Vulkan loader is dlopen'ed (nothing of Vulkan is linked).
            core.system_libs = ["pthread", "dl", "m"]
        # (requirement, its component octo_core uses, the library a static core's consumers link)
        for dep, component, lib in (("nlohmann_json", "nlohmann_json", None), ("pcre2", "pcre2-8", "pcre2-8"),
                                    ("zstd", "zstdlib", "zstd"), ("xxhash", "libxxhash", None),
                                    ("vulkan-headers", "vulkanheaders", None)):
            if self._from_platform(dep):
                # Conan 2.8's CMakeDeps fails on a component that requires a platform package ("is not
                # a direct dependency"); at the package level it is accepted and skipped.
                self.cpp_info.requires.append(f"{dep}::{component}")
                if lib and not self.options.shared:
                    core.system_libs.append(lib)
            else:
                core.requires.append(f"{dep}::{component}")
