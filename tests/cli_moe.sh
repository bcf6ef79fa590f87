#!/bin/sh
# cli_moe.sh: `plan` lays out mixtures of experts as Megatron-LM runs them.
# Mixtral-8x7B and DeepSeek-V3, generated from their published configs
# (tests/data/hf), on 64 and 512 H100s: each plan fits, splits the experts
# by expert (expert parallel above 1, the degree a divisor of the experts),
# and its Megatron-LM export carries the mixture's arguments and passes
# Megatron-LM's checks as tests/framework_check.py restates them (that part
# needs python3).  --expert-axes fixes where the experts split, and a layout
# whose expert-parallel degree does not divide the experts is refused with
# the rule's words.
. "$TESTS_SRCDIR/lib.sh"

HF="$TESTS_SRCDIR/data/hf"
PY=${PYTHON:-python3}
CHECK="$TESTS_SRCDIR/framework_check.py"
have_py=false
command -v "$PY" >/dev/null 2>&1 && have_py=true

run gen_mx "$SHARDLAB" gen moe --hf-config "$HF/Mixtral-8x7B-v0.1.json" -o "$TMP/mixtral.json"
expect_status 0 gen_mx
run gen_ds "$SHARDLAB" gen moe --hf-config "$HF/DeepSeek-V3.json" -o "$TMP/dsv3.json"
expect_status 0 gen_ds

MX='{"layers":32,"hidden":4096,"heads":32,"kv_heads":8,"ffn":14336,"vocab":32000,"seq":4096,"family":"llama","experts":8,"topk":2,"moe_ffn":14336,"moe_layers":32}'
DS='{"layers":61,"hidden":7168,"heads":128,"kv_heads":128,"ffn":18432,"vocab":129280,"seq":4096,"family":"llama","experts":256,"topk":8,"moe_ffn":2048,"moe_layers":58,"shared_ffn":2048}'

n_case=0
# case_ MODEL EXPERTS WORLD MODEL-JSON ARGS...: the plan fits with the
# experts split by expert, and its export passes Megatron-LM's checks
case_() {
	m=$1 e=$2 world=$3 mj=$4
	shift 4
	n_case=$((n_case + 1))
	f="case$n_case"
	run "$f" "$SHARDLAB" plan "$TMP/$m.json" --devices "$world" "$@"
	expect_status 0 "$f"
	ep=$(sed -n 's/^experts: .*; expert parallel \([0-9]*\).*/\1/p' "$TMP/$f.out")
	[ -n "$ep" ] || fail "case $n_case ($m on $world): no experts line: $(cat "$TMP/$f.out")"
	n_checks=$((n_checks + 1))
	[ "$ep" -gt 1 ] && [ $((e % ep)) -eq 0 ] ||
		fail "case $n_case ($m on $world $*): expert parallel $ep"
	run "$f.x" "$SHARDLAB" plan "$TMP/$m.json" --devices "$world" "$@" \
	    --export megatron -o "$TMP/$f.sh"
	expect_status 0 "$f.x"
	expect_in "$TMP/$f.sh" "--num-experts $e "
	expect_in "$TMP/$f.sh" "--expert-model-parallel-size $ep "
	expect_in "$TMP/$f.sh" "--moe-token-dispatcher-type alltoall"
	if $have_py; then
		mjs=$(printf '%s' "$mj" | sed "s/}\$/,\"ep\":$ep}/")
		"$PY" "$CHECK" megatron "$TMP/$f.sh" --world "$world" \
		    --model "$mjs" >"$TMP/$f.check" 2>&1 ||
			{ cat "$TMP/$f.sh"; fail "case $n_case ($m on $world $*): $(cat "$TMP/$f.check")"; }
		n_checks=$((n_checks + 1))
	fi
}

# Mixtral-8x7B: 8 experts of 14336, top-2, every layer a mixture
case_ mixtral 8 64 "$MX" --global-batch 256
case_ mixtral 8 512 "$MX" --global-batch 1024
expect_in "$TMP/case2.sh" "--moe-router-topk 2 --moe-ffn-hidden-size 14336"
# DeepSeek-V3: 256 experts of 2048, top-8, three dense layers, a shared
# expert, aux-loss-free routing, latent attention; on 64 devices only
# with the optimizer states in host memory and recomputation
case_ dsv3 256 512 "$DS" --global-batch 4096 --pp 32
case_ dsv3 256 64 "$DS" --global-batch 512 --pp 32 --offload-optimizer --recompute auto
expect_in "$TMP/case3.sh" '--moe-layer-freq "([0]*3+[1]*58)"'
expect_in "$TMP/case3.sh" "--moe-shared-expert-intermediate-size 2048"
expect_in "$TMP/case3.sh" "--moe-router-score-function sigmoid --moe-router-enable-expert-bias"
expect_in "$TMP/case3.sh" "--multi-latent-attention"
expect_in "$TMP/case3.sh" "--kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128"

# --expert-axes: over the data-parallel axis, expert tensor parallel is
# the tensor-parallel degree; over the tensor-parallel one, 1
run ax_dp "$SHARDLAB" plan "$TMP/mixtral.json" --devices 64 --global-batch 256 \
    --pp 8 --tp 2 --expert-axes dp --export megatron
expect_status 0 ax_dp
expect_in "$TMP/ax_dp.out" "--expert-model-parallel-size 4 --expert-tensor-parallel-size 2"
run ax_tp "$SHARDLAB" plan "$TMP/mixtral.json" --devices 64 --global-batch 256 \
    --pp 8 --tp 2 --expert-axes tp --export megatron
expect_status 0 ax_tp
expect_in "$TMP/ax_tp.out" "--expert-model-parallel-size 2 --expert-tensor-parallel-size 1"
run ax_both "$SHARDLAB" plan "$TMP/mixtral.json" --devices 64 --global-batch 256 \
    --pp 8 --tp 2 --expert-axes dp,tp
expect_status 0 ax_both
expect_in "$TMP/ax_both.out" "expert parallel 8 (outer,inner axis), 1 per device, expert tensor parallel 1"

# experts that do not divide over the expert axis: 8 over 3
run bad_ep "$SHARDLAB" plan "$TMP/mixtral.json" --devices 48 --global-batch 96 \
    --pp 4 --tp 4 --expert-axes dp
expect_status 1 bad_ep
expect_in "$TMP/bad_ep.err" "8 experts are not a multiple of expert parallel 3"
run bad_ax "$SHARDLAB" plan "$TMP/mixtral.json" --devices 64 --expert-axes ep
expect_status 2 bad_ax
expect_in "$TMP/bad_ax.err" "--expert-axes: expected none, dp, tp or dp,tp, got 'ep'"
# top-k above the experts, named by its field
run bad_k "$SHARDLAB" gen moe --experts 4 --topk 8 -o "$TMP/bad.json"
expect_status 2 bad_k
expect_in "$TMP/bad_k.err" "topk 8 is above the expert count 4"
# torchtitan's model has no experts
run titan "$SHARDLAB" plan "$TMP/mixtral.json" --devices 64 --framework torchtitan
expect_status 1 titan
expect_in "$TMP/titan.err" "has no experts or latent attention"

done_ok
