// Fills a KernelTable with the functions of the enclosing target namespace.
// Spliced into a target namespace after every kernel body.

inline KernelTable make_kernel_table() {
  KernelTable t{};
  t.target = kTarget;
  t.q8_0_bias = kQ8_0Bias;
  t.gemv_panels = kGemvPanels;
  t.matmul[static_cast<int>(PackedKind::kF32)] = matmul_f32;
  t.matmul[static_cast<int>(PackedKind::kF16)] = matmul_f16;
  t.matmul[static_cast<int>(PackedKind::kBF16)] = matmul_bf16;
  t.matmul[static_cast<int>(PackedKind::kQ8_0)] = matmul_q8_0;
  t.matmul[static_cast<int>(PackedKind::kQ4_0)] = matmul_q4_0;
  t.matmul[static_cast<int>(PackedKind::kQ4_K)] = matmul_q4_k;
  t.matmul[static_cast<int>(PackedKind::kQ6_K)] = matmul_q6_k;
  t.matmul[static_cast<int>(PackedKind::kQ5_0)] = matmul_q5_0;
  t.matmul[static_cast<int>(PackedKind::kQ5_1)] = matmul_q5_1;
  t.matmul[static_cast<int>(PackedKind::kIQ4_NL)] = matmul_iq4_nl;
  t.matmul[static_cast<int>(PackedKind::kQ5_K)] = matmul_q5_k;
  t.matmul[static_cast<int>(PackedKind::kIQ4_XS)] = matmul_iq4_xs;
  t.matmul[static_cast<int>(PackedKind::kQ3_K)] = matmul_q3_k;
  t.quantize_q8_row = quantize_q8_row;
  t.quantize_k_row = quantize_k_row;
  t.rmsnorm = rmsnorm;
  t.layernorm = layernorm;
  t.rope = rope;
  t.softmax = softmax;
  t.softmax_step = softmax_step;
  t.silu_mul = silu_mul;
  t.gelu = gelu;
  t.add_inplace = add_inplace;
  t.dot_f32 = dot_f32;
  t.f16_to_f32_row = f16_to_f32_row;
  t.f32_to_f16_row = f32_to_f16_row;
  t.round_f16_row = round_f16_row;
  t.q8_0_row = q8_0_row;
  t.q8_0_columns = q8_0_columns;
  t.attention_rows = attention_rows;
  t.lora_tile = lora_tile;
  t.q8_0_tile_probe = q8_0_tile_probe;
  return t;
}
