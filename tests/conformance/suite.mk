# SPDX-License-Identifier: Apache-2.0
# ONNX conformance (docs/conformance.md): Debian's libonnx-testdata node tests of the operators
# the compiler claims, through tpu-compile and tpu-infer, each output element checked against
# a bound derived from the numerics contract. Needs /usr/bin/python3 with python3-onnx and
# python3-numpy (Debian's; scripts/deps.sh installs them).
#   test-conformance-selftest (make test)      the runner against its stand-in (standin.py):
#                                              bounds hold for an emulation of the contract,
#                                              faults are classified, perturbations caught
#   test-conformance          (make test)      the sample (tests/conformance/sample.txt), N = 4, 8,
#                                              and tests/conformance/extra.py's node tests
#                                              (grouped Conv, embedding Gather)
#   test-conformance-full     (make test-full) every test of the claimed operators, N = 8 and
#                                              16; writes docs/conformance-results.md

CONF_PY    := /usr/bin/python3
CONF_RUN   := nice -n 10 $(CONF_PY) tests/conformance/conformance.py
CONF_TOOLS := $(BUILD)/tools/tpu-compile $(BUILD)/tools/tpu-infer

TEST_SUITES += test-conformance-selftest test-conformance test-conformance-rtl
FULL_SUITES += test-conformance-full

.PHONY: test-conformance-selftest test-conformance test-conformance-full

test-conformance-selftest:
	BUILD=$(BUILD) nice -n 10 $(CONF_PY) tests/conformance/selftest.py

test-conformance: $(CONF_TOOLS)
	$(CONF_RUN) --tools $(BUILD)/tools --list tests/conformance/sample.txt --mxu 4 --mxu 8 \
	    --self-test --work $(BUILD)/conformance
	$(CONF_PY) tests/conformance/extra.py $(BUILD)/conformance-extra/data
	$(CONF_RUN) --tools $(BUILD)/tools --data $(BUILD)/conformance-extra/data --mxu 4 --mxu 8 \
	    --self-test --work $(BUILD)/conformance-extra/work

# a sample on the verilated N = 4 core (the same build as test-core-cosim's): every trace
# record and output identical to the model's, and the output within its bound; and 10 of the
# extra tests (grouped Conv 2-D/1-D, the embedding with int32 ids and with its Transpose;
# issue 32: LayerNorm, Softmax and ReduceMean over middle axes, the column broadcast, Div)
test-conformance-rtl: $(CONF_TOOLS) $(BUILD)/gen/gen $(CMODEL_LIB)
	$(CONF_RUN) --tools $(BUILD)/tools --list tests/conformance/rtl_sample.txt --mxu 4 \
	    --imem-insns 1024 --rtl --work $(BUILD)/conformance-rtl
	$(CONF_PY) tests/conformance/extra.py $(BUILD)/conformance-extra/data
	$(CONF_RUN) --tools $(BUILD)/tools --data $(BUILD)/conformance-extra/data --mxu 4 \
	    --filter 'group2_pads|group_multiplier|conv1d_group4|embedding_transpose|int32_negative|layer_normalization_y_3d_axis1|softmax_middle_axis_4d|row_max_minus_x|div_two_activations|reduce_mean_axes_1_2' \
	    --imem-insns 1024 --rtl --work $(BUILD)/conformance-extra/rtl

test-conformance-full: $(CONF_TOOLS)
	$(CONF_RUN) --tools $(BUILD)/tools --mxu 8 --mxu 16 -j 2 --self-test \
	    --work $(BUILD)/conformance-full --table docs/conformance-results.md \
	    --cmdline "make test-conformance-full"
	$(CONF_PY) tests/conformance/extra.py $(BUILD)/conformance-extra/data
	$(CONF_RUN) --tools $(BUILD)/tools --data $(BUILD)/conformance-extra/data --mxu 8 --mxu 16 \
	    --self-test --work $(BUILD)/conformance-extra/full --table docs/conformance-extra-results.md \
	    --cmdline "make test-conformance-full (tests/conformance/extra.py)"
