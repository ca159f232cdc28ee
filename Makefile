# The two commands: `make run` and `make test`. Each installs what is missing (Debian packages,
# npm packages for the e2e clients), builds with two jobs, and runs.

BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS       ?= 2
BUILD_TYPE ?= RelWithDebInfo
PORT       ?= 8888
IP         ?= 127.0.0.1
ARGS       ?=
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Needed to build (python3-dev: the zygote embeds the kernels' Python).
BUILD_PACKAGES  := build-essential cmake pkg-config libboost-dev libzmq3-dev cppzmq-dev \
                   nlohmann-json3-dev libssl-dev libseccomp-dev python3-dev
# Needed to serve: the sandbox and the kernels (r-cran-irkernel: the R kernelspec "ir").
KERNEL_PACKAGES := bubblewrap python3-ipykernel python3-numpy python3-pandas python3-matplotlib python3-dill \
                   r-cran-irkernel
# Needed to add libraries (docs/operations.md, "Adding Python libraries"): venv with pip.
ADMIN_PACKAGES  := python3-venv
RUN_PACKAGES    := $(BUILD_PACKAGES) $(KERNEL_PACKAGES) $(ADMIN_PACKAGES)
# The container image's last stage has the built binaries and no compiler: the shared libraries
# they link, instead of the -dev packages (the Dockerfile installs these through `make deps-image`).
IMAGE_PACKAGES  := libzmq5 libssl3 libseccomp2 libpython3.11 ca-certificates curl $(KERNEL_PACKAGES)
# Needed by the test suites: doctest, pytest (and its per-test timeout) for the Python e2e
# suites, Python clients (jsonschema for the OpenAPI checks), jupyter_server for the
# --gateway-url test and nbclassic (its classic notebook UI) for the README's attach commands, Chromium for the web UI test, clang-format-14 for the formatting
# check, openssl and curl for the TLS test, clang-14 and its runtime for the libFuzzer targets,
# gdb for the threads' stacks of a gateway that does not stop when an e2e case asks it to.
TEST_PACKAGES := doctest-dev clang-format-14 python3-pytest python3-pytest-timeout \
                 python3-jupyter-client python3-websocket python3-jsonschema \
                 python3-jupyter-server python3-nbclassic chromium openssl curl clang-14 libclang-rt-14-dev \
                 gdb
# Needed by the operations tests: promtool and a Prometheus server (metrics), nginx (two
# replicas), and Debian's Docker, docker-compose v1 and debootstrap (compose.yaml, really run).
OPS_TEST_PACKAGES := prometheus nginx docker.io docker-compose debootstrap

.PHONY: run test test-asan test-tsan fuzz fuzz-build build deps deps-build deps-image deps-test \
        npm-deps clean

run: deps build
	$(BUILD)/gateway/callisto --ip $(IP) --port $(PORT) $(ARGS)

test: deps deps-test npm-deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCALLISTO_BUILD_TESTS=ON
	cmake --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -j2
	$(MAKE) fuzz-build
	cd $(FUZZ_BUILD) && ctest --output-on-failure -L fuzz

# Unit and integration suites under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: deps deps-test
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCALLISTO_SANITIZE=ON -DCALLISTO_BUILD_TESTS=ON
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure --timeout 900 -L 'unit|integration'

# The suites against a ThreadSanitizer build. A race reported in a test program, or in a
# gateway an e2e case runs (it then exits 66, not 0), fails that test. What is suppressed, and
# why, is in tests/tsan.supp. The e2e suite runs too (the zygote is built without TSan, as
# kernels are its forks; RSS bounds are not judged); TSAN_LABELS='unit|integration' skips it.
TSAN_LABELS ?= unit|integration|e2e
test-tsan: deps deps-test npm-deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALLISTO_TSAN=ON -DCALLISTO_BUILD_TESTS=ON
	cmake --build $(TSAN_BUILD) -j$(JOBS)
	cd $(TSAN_BUILD) && TSAN_OPTIONS="exitcode=66 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	    ctest --output-on-failure --timeout 3600 -L '$(TSAN_LABELS)'

# The libFuzzer targets (tests/fuzz): built with clang, each run FUZZ_SECONDS from its seed
# corpus, new inputs kept under $(FUZZ_BUILD)/corpus. make test runs each for a fixed count.
fuzz: deps deps-test fuzz-build
	@for t in $$(cd tests/fuzz/corpus && ls); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	  echo "== $$t, $(FUZZ_SECONDS) s"; \
	  $(FUZZ_BUILD)/tests/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
	    -rss_limit_mb=2048 -print_final_stats=1 $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t \
	    || exit 1; \
	done

fuzz-build:
	CXX=clang++-14 cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALLISTO_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz_all

# What `make run` needs, and nothing of the tests': doctest is a test package, so the suites are
# not configured here (tests/deploy/test_make_build_without_test_packages.py keeps it so).
BUILD_TARGETS ?= callisto callisto-zygote callisto-load
CMAKE_ARGS    ?=
build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCALLISTO_BUILD_TESTS=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD) -j$(JOBS) --target $(BUILD_TARGETS)

# Installs only the Debian packages that are missing (non-interactive: CI has no stdin).
define apt_install_missing
	@missing=$$(for p in $(1); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	  done); \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call apt_install_missing,$(RUN_PACKAGES))

deps-build:
	$(call apt_install_missing,$(BUILD_PACKAGES))

deps-image:
	$(call apt_install_missing,$(IMAGE_PACKAGES))

deps-test:
	$(call apt_install_missing,$(TEST_PACKAGES) $(OPS_TEST_PACKAGES))
	@command -v node >/dev/null && command -v npm >/dev/null || { \
	  echo "Installing Node.js and npm"; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends nodejs npm; }

npm-deps:
	cd tests/e2e/node && npm ci --no-audit --no-fund --loglevel=error
	cd tests/e2e/browser && npm ci --no-audit --no-fund --loglevel=error

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
