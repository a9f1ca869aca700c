# The README's two quick-start commands. Both run the idempotent bootstrap first.
#   make demo: builds only the `tg` command (target tg_cli) and trains the default MNIST CNN on
#              the shipped data (data/mnist), ending with "test accuracy: NN.NN%".
#   make test: builds everything and runs the test suite.
# And, outside the quick start:
#   make python: builds the Python package tensorgraph and installs it into the machine's Python 3
#                (Debian's /usr/bin/python3, into its site-packages: /usr/local/lib/python3.X/
#                dist-packages), so `python3 -c "import tensorgraph"` works anywhere.
#   make check-reliability: the sanitizer build, its fast test subset and the fuzz targets
#              (scripts/check-reliability.sh; CI runs it after make test, see .ci/run).
BUILD_DIR ?= $(or $(TG_BUILD_DIR),build)
# Extra arguments for the demo's `tg train`, e.g. make demo DEMO_ARGS="--epochs 3".
DEMO_ARGS ?=
.PHONY: all build demo test check-reliability bench python clean
all: build
build:
	TG_BUILD_DIR=$(BUILD_DIR) ./scripts/bootstrap.sh
# OpenMP threads sleep instead of spinning while they wait (OMP_WAIT_POLICY=passive): much
# faster when other processes share the cores, about the same on an idle machine.
# Without a GPU the demo trains on the CPU, so a fresh build skips the CUDA backend (the test
# build compiles it whenever the toolkit is there).
demo:
	@start=$$(date +%s); \
	if ! nvidia-smi -L >/dev/null 2>&1; then export TG_CMAKE_ARGS="$${TG_CMAKE_ARGS:-} -DTG_BUILD_CUDA=OFF"; fi; \
	TG_BUILD_DIR=$(BUILD_DIR) TG_BUILD_TARGET=tg_cli ./scripts/bootstrap.sh && \
	built=$$(date +%s) && \
	OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive} ./$(BUILD_DIR)/bin/tg train $(DEMO_ARGS) && \
	end=$$(date +%s) && \
	echo "make demo: $$((end - start)) s wall ($$((built - start)) s set-up and build, $$((end - built)) s training)"
test: build
	cd $(BUILD_DIR) && ctest --output-on-failure --parallel $$(nproc) --timeout 600
python:
	TG_BUILD_DIR=$(BUILD_DIR) TG_BUILD_TARGET=tg_python ./scripts/bootstrap.sh
	cmake --install $(BUILD_DIR) --component python
# Fuzz seconds per target: make check-reliability TG_FUZZ_SECONDS=600 (docs/reliability.md).
check-reliability:
	./scripts/bootstrap.sh --reliability
	./scripts/check-reliability.sh
bench: build
	./$(BUILD_DIR)/bench/tg_bench_cpu --benchmark_min_time=0.5
clean:
	rm -rf $(BUILD_DIR)
