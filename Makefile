# Thin wrapper over CMake. `make run` and `make test` do all the set-up on a fresh Debian machine.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
MODEL      ?= models/fashion-2017-high.safetensors
N          ?= 10000
CMAKE_ARGS ?=

.PHONY: all build asan run test test-fast test-asan test-gpu clean format

all: build

build:
	tools/setup.sh run
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DNC_SANITIZE=ON $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# The main job: eval of the default model on the whole test set.
run: build
	tools/run.sh $(BUILD) $(MODEL) $(N)

# The whole suite, in the release build and again under ASan + UBSan.
test:
	tools/setup.sh test
	$(MAKE) build asan
	$(MAKE) test-fast test-asan

# GPU suites skip (with a message) where there is no GPU.
test-fast:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan:
	cd $(ASAN_BUILD) && ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --output-on-failure -j $(JOBS) -LE gpu

# The GPU suite (on a machine with a GPU; it skips with a message elsewhere).
test-gpu: build
	cd $(BUILD) && ctest --output-on-failure -L gpu

format:
	clang-format -i include/*.h src/*/*.[ch] src/*/*.cu cli/*.[ch] tests/*.h tests/*/*.c bench/ab/*.c

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
