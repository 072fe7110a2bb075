#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench-article (issue 18, "The article's comparison"): the TPU article times VGG19 (and
# Xception, ResNet152V2) on a TPU v2-8. Here torchvision's VGG-19, ResNet-50 and ResNet-152 at
# 224x224 (random weights, exported with torch.onnx.export at a dynamic batch by tests/zoo/zoo.py
# --export-only: the predicted cycles depend on neither the weights nor the data) are
# predicted by tpu-compile --report-only (the C model's cycle count of the compiled per-core
# program; a program longer than the model's IMEM runs in segments cut before an lw, or where
# no matmul comes before the next) at the article's batch sizes 32 and 128:
#   1. on --mxu 128 --cores 8 (TPU v2-8's shape) at 700 MHz (TPU v2's clock);
#   2. on the fastest configuration tpu-explore finds for an Alveo U250 at $U250_MHZ (default
#      100 MHz: the clock gen's constraints ask for; no place-and-route timing exists for
#      UltraScale+ here, bench/RESULTS.md "Article comparison" says why this figure), swept
#      with $U250_PER_CORE image(s) per core per run (default 1: at N <= 32, the sizes that
#      fit a U250, a 224x224 VGG-19 needs 0.75 M instructions per image and more per core
#      exceed the predictor's 4 M); the configuration it names is then predicted with
#      $U250_RUN_PER_CORE images per core (default 4; the sweep's K when that needs more than
#      4 M instructions), and a batch of 32 or 128 runs as batch / (C x K) such runs one
#      after another (tpu-infer's chunks): the same program, the same cycles each (the timing
#      does not depend on the data), the host's time between chunks not counted;
#   3. that N x C again with the unified buffer's size swept ($U250_UB_KIB KiB: block RAM is
#      what the U250 has to spare; fewer round trips through host memory), the fastest that
#      still fits predicted as in 2.
#   4. TRAINING: each model's step (forward, loss, backward, all-reduce, Adam) on --mxu 128
#      --cores 8 at 700 MHz with ACC $ARTICLE_TRAIN_ACC_KIB KiB (default 4096: 8,192 rows; at
#      gen's 1,024 KiB the 1x1 convs to 1,024 and more channels compute their weight gradient
#      in groups of output tiles, 17 % slower for ResNet-50), batch 32 and 128 as micro-steps of one image per
#      core (tpu-compile --train --logits --micro-batch 1 --report-only: a micro-step of VGG-19
#      is 1.6 M instructions, predicted in segments: an estimate, docs/training.md); VGG-19
#      ~10 min of host time each, ResNet-50 ~1, ResNet-152 ~3. The ResNets are trained as
#      exported in eval mode, BatchNormalization folded into the convs (the batch statistics
#      are not compiled: docs/training.md "Not yet").
#   5. THE ARTICLE'S OWN MODELS (models/article.py: Keras VGG19, ResNet152V2 and Xception as
#      keras.applications builds them, 192x192x3, 5 classes; exported with softmax for
#      inference and without (--logits) for training): inference of batch $KERAS_BATCH on
#      --mxu 128 --cores 8 --imem-insns 32768 at 700 MHz, and the training step at that batch
#      with the issue's target command, no other option (tpu-compile --train --logits --mxu 128
#      --cores 8 --batch 128 --freq-mhz 700 --report-only: micro-steps and memories the tools'
#      and gen's defaults); a model the training compiler refuses is listed with its error
#      line. VGG19's step is ~35 min of host time (at a load of 6-7 on 2 cores; 15-50 s each for
#      the inference predictions, ~2 min for the six exports, the ONNX files 83 .. 450 MB).
# Parts 1-3 and 5's first table are INFERENCE (a forward pass); the article's figures are
# TRAINING steps (forward, backward, update), which parts 4 and 5 predict. The host time of
# every prediction is printed.
# usage: bench/article.sh [WORKDIR]   (ARTICLE_MODELS, ARTICLE_BATCHES, U250_MHZ, U250_MXU,
#                                       U250_CORES, U250_PER_CORE, U250_RUN_PER_CORE, U250_UB_KIB,
#                                       ARTICLE_TRAIN_ACC_KIB, KERAS_MODELS, KERAS_BATCH,
#                                       ARTICLE_PARTS="1 2 3 4 5": which parts to run;
#                                       the table shows whatever WORKDIR holds;
#                                       ARTICLE_REUSE=1 keeps predictions already made)
set -u
W=${1:-${BUILD:-build}/bench/article}
T=${BUILD:-build}/tools
PY=/usr/bin/python3
MODELS=${ARTICLE_MODELS:-"vgg19 resnet50 resnet152"}
BATCHES=${ARTICLE_BATCHES:-"32 128"}
U250_MHZ=${U250_MHZ:-100}
U250_MXU=${U250_MXU:-8,16,32,64,128}
U250_CORES=${U250_CORES:-1,2,4,8}
U250_PER_CORE=${U250_PER_CORE:-1}
U250_RUN_PER_CORE=${U250_RUN_PER_CORE:-4}
U250_UB_KIB=${U250_UB_KIB:-128,256,512,1024,2048}
TRAIN_ACC=${ARTICLE_TRAIN_ACC_KIB:-4096}
KERAS=${KERAS_MODELS:-"vgg19 resnet152v2 xception"}
KERAS_BATCH=${KERAS_BATCH:-128}
PARTS=${ARTICLE_PARTS:-"1 2 3 4 5"}
mkdir -p "$W"
now() { date +%s.%N; }
need=""
case " $PARTS " in *" "[1234]" "*) for m in $MODELS; do [ -f "$W/$m.onnx" ] || need="$need $m"; done ;; esac
if [ -n "$need" ]; then
    t0=$(now)
    $PY tests/zoo/zoo.py "$W" 224 1 --export-only $need >"$W/export.log" 2>&1 ||
        { tail -n 20 "$W/export.log"; exit 1; }
    echo "exported$need at 224x224 in $(echo "$(now) - $t0" | bc) s"
fi
# predict MODEL N C BATCH MHZ TAG: writes $W/MODEL_TAG_bBATCH.json, .txt and .sec (host s)
# (more tpu-compile options after TAG)
predict() {
    o="$W/$1_$6_b$4"
    p_m=$1 p_n=$2 p_c=$3 p_b=$4 p_f=$5
    shift 6
    [ "${ARTICLE_REUSE:-0}" = 1 ] && [ -s "$o.json" ] && [ -s "$o.sec" ] && return 0
    t0=$(now)
    if ! "$T/tpu-compile" "$W/$p_m.onnx" --mxu "$p_n" --cores "$p_c" --batch "$p_b" --freq-mhz "$p_f" \
            --report-only --json "$o.json" "$@" >"$o.txt" 2>"$o.err"; then
        echo "FAIL: $p_m N = $p_n C = $p_c batch $p_b: $(tail -n 1 "$o.err")"; rm -f "$o.json"; return 1
    fi
    echo "$(now) - $t0" | bc >"$o.sec"
}
case " $PARTS " in *" 1 "*)
echo "== 1. N = 128, C = 8 at 700 MHz (TPU v2-8's shape and clock)"
for m in $MODELS; do for b in $BATCHES; do
    predict "$m" 128 8 "$b" 700 v2 && echo "  $m batch $b: $(cat "$W/${m}_v2_b$b.sec") s on the host"
done; done ;;
esac
case " $PARTS " in *" 2 "*)
    echo "== 2. the fastest configuration tpu-explore finds for an Alveo U250 at $U250_MHZ MHz"
    for m in $MODELS; do
        t0=$(now)
        "$T/tpu-explore" "$W/$m.onnx" --mxu "$U250_MXU" --cores "$U250_CORES" --per-core "$U250_PER_CORE" \
            --part xcu250 --freq-mhz "$U250_MHZ" -o "$W/${m}_u250.csv" --png "$W/${m}_u250.png" \
            >"$W/${m}_u250.txt" 2>"$W/${m}_u250.err"
        echo "$(now) - $t0" | bc >"$W/${m}_u250.sec"
        best=$(grep '^fastest that fits' "$W/${m}_u250.txt")
        echo "  $m: $best (sweep: $(cat "$W/${m}_u250.sec") s)"
        n=$(echo "$best" | sed -n 's/.*N = \([0-9]*\), C = \([0-9]*\).*/\1/p')
        c=$(echo "$best" | sed -n 's/.*N = \([0-9]*\), C = \([0-9]*\).*/\2/p')
        [ -n "$n" ] || continue
        for k in $U250_RUN_PER_CORE $U250_PER_CORE; do
            b=$((c * k))
            if predict "$m" "$n" "$c" "$b" "$U250_MHZ" u250 >/dev/null; then
                echo "$n $c $k" >"$W/${m}_u250.best"
                echo "  $m N = $n, C = $c batch $b: $(cat "$W/${m}_u250_b$b.sec") s on the host"
                break
            fi
            echo "  $m N = $n, C = $c: $k per core refused ($(tail -n 1 "$W/${m}_u250_b$b.err" | cut -c1-70)...)"
        done
    done ;;
esac
case " $PARTS " in *" 3 "*)
    echo "== 3. that N x C with the unified buffer swept (--ub-kib $U250_UB_KIB), at $U250_MHZ MHz"
    for m in $MODELS; do
        [ -s "$W/${m}_u250.best" ] || continue
        read n c k0 <"$W/${m}_u250.best"
        t0=$(now)
        "$T/tpu-explore" "$W/$m.onnx" --mxu "$n" --cores "$c" --per-core "$U250_PER_CORE" \
            --ub-kib "$U250_UB_KIB" --part xcu250 --freq-mhz "$U250_MHZ" -o "$W/${m}_u250ub.csv" \
            >"$W/${m}_u250ub.txt" 2>"$W/${m}_u250ub.err"
        echo "$(now) - $t0" | bc >"$W/${m}_u250ub.sec"
        best=$(grep '^fastest that fits' "$W/${m}_u250ub.txt")
        echo "  $m: $best (sweep: $(cat "$W/${m}_u250ub.sec") s)"
        ub=$(echo "$best" | sed -n 's|.*UB/ACC/WMEM \([0-9]*\)/.*|\1|p')
        [ -n "$ub" ] || continue
        for k in $U250_RUN_PER_CORE $U250_PER_CORE; do
            b=$((c * k))
            if predict "$m" "$n" "$c" "$b" "$U250_MHZ" u250ub --ub-kib "$ub" >/dev/null; then
                echo "$n $c $k $ub" >"$W/${m}_u250ub.best"
                echo "  $m N = $n, C = $c, UB $ub KiB, batch $b: $(cat "$W/${m}_u250ub_b$b.sec") s on the host"
                break
            fi
            echo "  $m N = $n, C = $c: $k per core refused ($(tail -n 1 "$W/${m}_u250ub_b$b.err" | cut -c1-70)...)"
        done
    done ;;
esac
case " $PARTS " in *" 4 "*)
echo "== 4. training: each model's step on N = 128, C = 8 at 700 MHz, ACC $TRAIN_ACC KiB (micro-steps of one image per core)"
for m in $MODELS; do for b in $BATCHES; do
    predict "$m" 128 8 "$b" 700 train --train --logits --micro-batch 1 --imem-insns 32768 --acc-kib "$TRAIN_ACC" &&
        echo "  $m batch $b: $(grep -o '^total: [0-9]* cycles per step[^:]*' "$W/${m}_train_b$b.txt"), $(cat "$W/${m}_train_b$b.sec") s on the host"
done; done ;;
esac
case " $PARTS " in *" 5 "*)
echo "== 5. the article's Keras models at 192x192, 5 classes: N = 128, C = 8 at 700 MHz, batch $KERAS_BATCH"
for m in $KERAS; do for v in "" _logits; do
    f="$W/keras_$m$v.onnx"
    [ -f "$f" ] && continue
    t0=$(now)
    $PY models/article.py "$m" "$f" ${v:+--logits} >"$W/keras_export.log" 2>&1 ||
        { tail -n 3 "$W/keras_export.log"; exit 1; }
    echo "  exported keras_$m$v.onnx in $(echo "$(now) - $t0" | bc) s"
done; done
for m in $KERAS; do
    predict "keras_$m" 128 8 "$KERAS_BATCH" 700 v2 --imem-insns 32768 &&
        echo "  $m inference: $(cat "$W/keras_${m}_v2_b$KERAS_BATCH.sec") s on the host"
done
for m in $KERAS; do
    predict "keras_${m}_logits" 128 8 "$KERAS_BATCH" 700 train --train --logits &&
        echo "  $m training step: $(cat "$W/keras_${m}_logits_train_b$KERAS_BATCH.sec") s on the host"
done ;;
esac
W="$W" MODELS="$MODELS" BATCHES="$BATCHES" KERAS="$KERAS" KB="$KERAS_BATCH" $PY - <<'PY'
import json, os
W, models, batches = os.environ["W"], os.environ["MODELS"].split(), os.environ["BATCHES"].split()
# The article (docs: /work/shared/BACKGROUND.md, issue 18): TPU v2-8 TRAINING, VGG19 batch 128:
# ~4 s per epoch of 23 steps, ~171 ms/step (748 images/s); a K80 at batch 32: 25 epochs in
# 1,867 s (the same 23 x 128 = 2,944 images per epoch: ~39 images/s).
article = {("vgg19", "128"): "TPU v2-8 training: ~171 ms/step = ~749 images/s",
           ("vgg19", "32"): "K80 training: 25 epochs in 1,867 s = ~39 images/s"}
NAMES = {"vgg19": "VGG-19", "resnet50": "ResNet-50", "resnet152": "ResNet-152"}
def row(tag, m, b):
    p = os.path.join(W, "%s_%s_b%s" % (m, tag, b))
    chunks = 1
    best = os.path.join(W, "%s_%s.best" % (m, tag))
    if tag != "v2" and os.path.exists(best):
        n, c, k = open(best).read().split()[:3]
        k = int(k) * int(c)
        p = os.path.join(W, "%s_%s_b%d" % (m, tag, k))
        chunks = -(-int(b) // k)      # runs of C x K images, one after another
    if not os.path.exists(p + ".json"):
        return None
    r = json.load(open(p + ".json"))
    t = r["total"]
    ms = 1e3 * chunks * t["cycles"] / (r["freq_mhz"] * 1e6)
    ips = int(b) / (ms / 1e3)
    note = article.get((m, b), "")
    if chunks > 1:
        note = ("%d runs of %d; " % (chunks, r["batch_per_core"] * r["cores"])) + note
    if tag == "u250ub":
        note = ("UB %d KiB; " % (r["ub_rows"] * 2 * r["mxu"] // 1024)) + note
    return ("%-10s %5s %6d %3d %5d %9d %13.0f %9.1f %10.1f %6.2f %5d %8.1f  %s" % (
        NAMES.get(m, m), b, r["mxu"], r["cores"], r["freq_mhz"], r["instructions"],
        t["cycles_per_image"], ms, ips, 100 * t["mxu_util"], t["model_runs"],
        float(open(p + ".sec").read()), note))
hdr = "%-10s %5s %6s %3s %5s %9s %13s %9s %10s %6s %5s %8s  %s" % (
    "model", "batch", "N", "C", "MHz", "insns", "cycles/image", "ms/batch", "images/s",
    "MXU%", "runs", "host s", "the article (training)")
for tag, title in (("v2", "N = 128, C = 8 at 700 MHz: predicted INFERENCE"),
                   ("u250", "Alveo U250, the fastest that fits: predicted INFERENCE"),
                   ("u250ub", "Alveo U250, that N x C with the unified buffer swept: predicted INFERENCE")):
    rows = [x for m in models for b in batches for x in [row(tag, m, b)] if x]
    if rows:
        print("\n" + title)
        print(hdr)
        print("\n".join(rows))
trows = []
for m in models:
    for b in batches:
        p = os.path.join(W, "%s_train_b%s.json" % (m, b))
        if os.path.exists(p):
            r = json.load(open(p))
            trows.append("%-10s %5s %6d %3d %5d %9d %14d %10.1f %10.1f  %5.1f %5.1f %5.1f %5.1f  %s" % (
                NAMES.get(m, m), b, r["mxu"], r["cores"], r["freq_mhz"], r["instructions"], r["cycles_per_step"],
                r["ms_per_step"], r["examples_per_s"], 100 * r["mxu_busy"], 100 * r["dma_busy"],
                100 * r["vpu_busy"], 100 * r["net_busy"], article.get((m, b), "")))
if trows:
    print("\nN = 128, C = 8 at 700 MHz: predicted TRAINING step (an estimate: run in segments; "
          "ResNets without BatchNormalization's statistics)")
    print("%-10s %5s %6s %3s %5s %9s %14s %10s %10s  %5s %5s %5s %5s  %s" % (
        "model", "batch", "N", "C", "MHz", "insns", "cycles/step", "ms/step", "images/s",
        "MXU%", "DMA%", "VPU%", "net%", "the article (training)"))
    print("\n".join(trows))
# The article's own models (part 5). Its step times at batch 128, from its figures for 25
# epochs of 23 steps (575 steps; the first epoch's compilation included, so an upper bound on
# the steady step): VGG19 ~171 ms (its ~4 s epochs after the first; 127.8 s / 575 = 222 ms
# with the compilation), ResNet152V2 295.6 s / 575 = 514 ms, Xception 132.1 s / 575 = 230 ms.
KERAS_ARTICLE = {"vgg19": ("VGG19", 171.0, "~171 ms (4 s / epoch of 23)"),
                 "resnet152v2": ("ResNet152V2", 295.6e3 / 575, "295.6 s / 575 steps"),
                 "xception": ("Xception", 132.1e3 / 575, "132.1 s / 575 steps")}
krows = []
for m in os.environ["KERAS"].split():
    name, art_ms, how = KERAS_ARTICLE.get(m, (m, None, ""))
    b = os.environ["KB"]
    inf, tr = [os.path.join(W, "keras_%s_b%s" % (x, b)) for x in (m + "_v2", m + "_logits_train")]
    if not os.path.exists(inf + ".json") and not os.path.exists(tr + ".json") and not os.path.exists(tr + ".err"):
        continue
    cols = ["%-11s %5s" % (name, b)]
    if os.path.exists(inf + ".json"):
        r = json.load(open(inf + ".json"))
        ms = 1e3 * r["total"]["cycles"] / (r["freq_mhz"] * 1e6)
        cols.append("%9.1f %8.1f %5.1f" % (ms, int(b) / (ms / 1e3), 100 * r["total"]["mxu_util"]))
    else:
        cols.append("%9s %8s %5s" % ("-", "-", "-"))
    refused = ""
    if os.path.exists(tr + ".json"):
        r = json.load(open(tr + ".json"))
        cols.append("%10.1f %5.2f %5.1f %5.1f" % (r["ms_per_step"], 100 * r["mxu_util"], 100 * r["mxu_busy"],
                                                 100 * r["dma_busy"]))
    else:
        cols.append("%10s %5s %5s %5s" % ("-", "-", "-", "-"))
        if os.path.exists(tr + ".err"):
            lines = [l for l in open(tr + ".err").read().splitlines() if "error" in l]
            refused = lines[-1] if lines else ""
    cols.append("%9s  %s" % ("%.0f" % art_ms if art_ms else "-", how))
    krows.append(" ".join(cols) + ("\n    training refused: " + refused if refused else ""))
if krows:
    print("\nThe article's Keras models, 192x192, 5 classes, N = 128, C = 8 at 700 MHz: predicted INFERENCE "
          "of the batch and TRAINING step, beside the article's TPU v2-8 step")
    print("%-11s %5s %9s %8s %5s %10s %5s %5s %5s %9s  %s" % (
        "model", "batch", "inf ms", "images/s", "MXU%", "step ms", "MXU%", "busy%", "DMA%", "TPU ms",
        "the article's step"))
    print("\n".join(krows))
    print("MXU%: useful MACs / (N^2 x cycles); busy%: the step's cycles the MXU was busy (training); "
          "TPU ms: the article's\nstep (ResNet152V2, Xception: its 25 epochs' time over their 575 steps, "
          "the compilation included)")
print("\nms/batch: one run of the batch over the C cores (each core its batch / C images, "
      "all cores in parallel);\nhost s: the prediction's wall time on this machine "
      "(compile + the C model's run).")
PY
