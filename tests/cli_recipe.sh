#!/bin/sh
# The training recipe on the command line: gen builds the model asked for
# (family defaults, GPT-3 175B by its sizes), a generated model follows the
# same batch rule as the bundled one, the recipe options are checked and
# printed, and a plan records its recipe.
. "$TESTS_SRCDIR/lib.sh"

# GPT-3 175B from its sizes: 174.6 B parameters (within 0.5%).
run g3 "$SHARDLAB" gen gpt --layers 96 --hidden 12288 --heads 96 --seq 2048 -o "$TMP/gpt3.json"
expect_status 0 g3
run g3show "$SHARDLAB" show "$TMP/gpt3.json"
expect_status 0 g3show
params=$(sed -n 's/^parameters: \([0-9]*\) .*/\1/p' "$TMP/g3show.out")
n_checks=$((n_checks + 1))
[ "$params" -ge 173727000000 ] && [ "$params" -le 175473000000 ] ||
	fail "GPT-3 175B: expected 174.6 B parameters (within 0.5%), got $params"

# Members left out take the family's real defaults, never a toy model's.
run llama "$SHARDLAB" gen llama -o "$TMP/llama.json"
expect_status 0 llama
expect_in "$TMP/llama.json" '"hidden": 4096'
expect_in "$TMP/llama.json" '"ffn": 11008'
expect_in "$TMP/llama.json" '"vocab": 32000'
run ghelp "$SHARDLAB" gen gpt --help
expect_status 0 ghelp
expect_in "$TMP/ghelp.out" "--layers N"
expect_in "$TMP/ghelp.out" "--vocab 50257"
expect_not_in "$TMP/ghelp.out" "llama (defaults of"

# A generated model and the bundled model of the same sizes give the same
# memory on 8 and 64 devices (the batch follows micro-batch x devices for both).
run g17 "$SHARDLAB" gen gpt --layers 24 --hidden 2304 --heads 24 --seq 2048 \
    --vocab 51200 -o "$TMP/g17.json"
expect_status 0 g17
for d in 8 64; do
	run bun$d "$SHARDLAB" solve gpt-1.7b --devices $d
	expect_status 0 bun$d
	run gen$d "$SHARDLAB" solve "$TMP/g17.json" --devices $d
	expect_status 0 gen$d
	a=$(grep '^max memory per device' "$TMP/bun$d.out")
	b=$(grep '^max memory per device' "$TMP/gen$d.out")
	expect_eq "$b" "$a" "generated vs bundled gpt-1.7b on $d devices"
done
# ... and more devices never raise the memory of a data-parallel split.
m8=$(sed -n 's/^max memory per device: \([0-9.]*\) GiB.*/\1/p' "$TMP/gen8.out")
m64=$(sed -n 's/^max memory per device: \([0-9.]*\) GiB.*/\1/p' "$TMP/gen64.out")
n_checks=$((n_checks + 1))
awk "BEGIN { exit !($m64 <= $m8) }" || fail "memory rose from 8 ($m8) to 64 ($m64) devices"

# A Hugging Face config of another family than the one named is an error;
# a long context is capped at 4096 and the output says so.
cat >"$TMP/mistral.json" <<'JSON'
{"model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32,
 "num_key_value_heads": 8, "num_hidden_layers": 32, "intermediate_size": 14336,
 "vocab_size": 32000, "max_position_embeddings": 32768}
JSON
run wrongfam "$SHARDLAB" gen gpt --hf-config "$TMP/mistral.json"
expect_status 2 wrongfam
expect_in "$TMP/wrongfam.err" "llama-family model, not gpt"
run mis "$SHARDLAB" gen llama --hf-config "$TMP/mistral.json" -o "$TMP/m.json"
expect_status 0 mis
expect_in "$TMP/mis.err" "capped at 4096"
expect_in "$TMP/m.json" '"seq": 4096'
expect_in "$TMP/m.json" '"name": "mistral"'

# Recipe options: names checked, the recipe printed, the batch explained.
run badatt "$SHARDLAB" solve mlp-2layer --attention fast
expect_status 2 badatt
expect_in "$TMP/badatt.err" "--attention: expected flash or naive"
run badprec "$SHARDLAB" solve mlp-2layer --precision fp4
expect_status 2 badprec
# FP8 where the GPU has FP8 matrix units, refused where it has none
run fp8 "$SHARDLAB" solve mlp-2layer --precision fp8
expect_status 0 fp8
expect_in "$TMP/fp8.out" "FP8 matmuls (Transformer Engine)"
run fp8a100 "$SHARDLAB" solve mlp-2layer --precision fp8 --hw a100-sxm
expect_status 2 fp8a100
expect_in "$TMP/fp8a100.err" "has no FP8 matrix units"
run badrc "$SHARDLAB" solve mlp-2layer --recompute some
expect_status 2 badrc
run badgb "$SHARDLAB" solve gpt-1.7b --devices 8 --global-batch 60
expect_status 2 badgb
expect_in "$TMP/badgb.err" "not a multiple of the 8 samples"
run rec "$SHARDLAB" solve gpt-1.7b --devices 8 --global-batch 64 --precision megatron --attention naive
expect_status 0 rec
expect_in "$TMP/rec.out" "recipe: naive attention, Megatron-LM bf16 with fp32 main gradients (18 B/param)"
expect_in "$TMP/rec.out" "global batch 64 = 8 accumulation steps"

# Megatron's 18 bytes per parameter against 16: exactly 2 bytes per local
# parameter element more on a replicated plan of the MLP on one device.
run b16 "$SHARDLAB" solve mlp-2layer --devices 1 --json "$TMP/b16.json"
run b18 "$SHARDLAB" solve mlp-2layer --devices 1 --precision megatron --json "$TMP/b18.json"
o16=$(json_int "$TMP/b16.json" memory_objective_bytes)
o18=$(json_int "$TMP/b18.json" memory_objective_bytes)
expect_eq "$((o18 - o16))" "$((2 * 2097152))" "megatron minus bf16 on the MLP"

# The plan records the recipe and validate/tui reopen it.
run auto "$SHARDLAB" solve llama-7b --devices 2 --micro-batch 4 --recompute auto --json "$TMP/auto.json"
expect_status 0 auto
expect_in "$TMP/auto.out" "of 32 layers recomputed, the fewest"
n=$(sed -n 's/^recompute auto: \([0-9]*\) of 32.*/\1/p' "$TMP/auto.out")
n_checks=$((n_checks + 1))
[ "$n" -gt 0 ] && [ "$n" -lt 32 ] || fail "recompute auto: expected some of 32 layers, got '$n'"
# none recomputed does not fit, all recomputed does
run none "$SHARDLAB" solve llama-7b --devices 2 --micro-batch 4
expect_in "$TMP/none.out" "over capacity"
expect_in "$TMP/auto.json" '"recompute": "auto"'
expect_in "$TMP/auto.json" '"layer_recompute": ["full", "full"'

# Fine-tuning: the recipe is printed, recorded and reopened; the adapters'
# options need adapters; a target the model cannot have is refused.
run ql "$SHARDLAB" solve llama-7b --devices 1 --hw rtx4090-pcie --seq 512 --finetune qlora --lora-rank 16 --json "$TMP/ql.json"
expect_status 0 ql
expect_in "$TMP/ql.out" "QLoRA rank 16 on q,v over frozen 4-bit NF4 weights"
expect_in "$TMP/ql.json" '"finetune": "qlora"'
expect_in "$TMP/ql.json" '"lora_rank": 16'
expect_in "$TMP/ql.json" '"lora_targets": "q,v"'
run qlt "$SHARDLAB" timeline llama-7b --plan "$TMP/ql.json"
expect_status 0 qlt
expect_in "$TMP/qlt.out" "QLoRA rank 16 on q,v"
run qlr "$SHARDLAB" timeline llama-7b --plan "$TMP/ql.json" --lora-rank 8
expect_status 2 qlr
expect_in "$TMP/qlr.err" "--lora-rank 8 contradicts the plan"
# the same model fully fine-tuned is over the card's memory: exit 1
run full "$SHARDLAB" solve llama-7b --devices 1 --hw rtx4090-pcie --seq 512 --finetune full
expect_status 1 full
run nolora "$SHARDLAB" solve llama-7b --devices 1 --lora-rank 16
expect_status 2 nolora
expect_in "$TMP/nolora.err" "need --finetune lora or qlora"
run badt "$SHARDLAB" solve llama-7b --devices 1 --finetune lora --lora-targets q,qq
expect_status 2 badt
expect_in "$TMP/badt.err" "unknown target 'qq'"

done_ok
