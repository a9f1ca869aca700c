# The README's two quick-start commands. Both run the idempotent bootstrap first.
BUILD_DIR ?= $(or $(TG_BUILD_DIR),build)
.PHONY: all build demo test bench clean
all: build
build:
	TG_BUILD_DIR=$(BUILD_DIR) ./scripts/bootstrap.sh
demo: build
	./$(BUILD_DIR)/examples/tg_example_basic
	./$(BUILD_DIR)/examples/tg_example_mlp
test: build
	cd $(BUILD_DIR) && ctest --output-on-failure --parallel $$(nproc) --timeout 600
bench: build
	./$(BUILD_DIR)/bench/tg_bench_cpu --benchmark_min_time=0.5
clean:
	rm -rf $(BUILD_DIR)
