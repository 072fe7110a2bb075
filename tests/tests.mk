# Test suites. Each folder fragment (tests/*/suite.mk) defines its suites as make targets
# and appends their names to TEST_SUITES (run by `make test`) or FULL_SUITES (`make
# test-full`). tests/run.sh runs them one by one and prints "N passed, N failed".

TEST_SUITES :=
FULL_SUITES :=

# Flags for C test programs: the model's headers plus cmocka and MPFR.
TEST_CFLAGS := $(CFLAGS_COMMON) $(CMODEL_INC)
TEST_LIBS   := $(CMODEL_LIB) -lcmocka -lmpfr -lgmp -lm

include $(sort $(wildcard tests/*/suite.mk))

test: deps
	@sh tests/run.sh $(TEST_SUITES)

test-full: deps
	@sh tests/run.sh $(TEST_SUITES) $(FULL_SUITES)
