/**
 * @file mha.c
 * @brief Exercise 05: multi-head self-attention (timm's `Attention`, lib/attention/attention.h),
 *        built from the pieces in attention.c and heads.c, your version.
 *
 * Shape legend: B sequences, N tokens, D width, H heads, Dh = D/H per head.
 *
 * Fill in the TODOs between the trace_emit() lines; keep those lines and the two
 * roads' if: the tests read every stage from the traces, and a hint names the first
 * stage that is wrong.
 * `make exercise CH=05` grades it with heads.c; README.md says what the tests
 * check, what you may call and what the hints mean. Until the TODOs are done
 * out is all zeros, so the tests fail without crashing.
 */
#include "attention/attention.h"
#include "ops/ops.h"

#include <stddef.h>
#include <string.h>

void mha_forward(float *out, const float *x, const AttentionWeights *w,
                 const AttentionOptions *opt, MhaScratch *s, int B, int N, int D, int H,
                 const Tracer *tr) {
    // x is (B, N, D), out is (B, N, D); opt NULL: scale 1/√Dh, no mask.
    // Self-attention: q, k and v are all projections of the same tokens x.
    // The scratch s holds every intermediate (attention.h, MhaScratch): s->flat (B, N, D);
    // s->q, s->k, s->v, s->heads (B, H, N, Dh); s->scores, s->scaled, s->probs (B, H, N, N);
    // s->context (B, N, D); s->keep_matrices (which road, below). The B·H heads are
    // G = B·H independent (N, Dh) blocks. w->head_off (H) switches heads off, or NULL.
    const int Dh = D / H;

    // TODO 1, q: project, then split the width into heads (timm: self.qkv(x).reshape(…).permute(…))
    //   s->flat = x·q_wᵀ + q_b, B·N rows of D features in, D out:
    //             ops_linear(s->flat, x, w->q_w, w->q_b, B·N, D, D)
    //   s->q    = s->flat split into heads, (B, N, D) → (B, H, N, Dh): heads_split()
    trace_emit(tr, "q", s->q, 4, B, H, N, Dh);
    // TODO 2, k: the same with w->k_w and w->k_b, into s->k
    trace_emit(tr, "k", s->k, 4, B, H, N, Dh);
    // TODO 3, v: the same with w->v_w and w->v_b, into s->v
    trace_emit(tr, "v", s->v, 4, B, H, N, Dh);

    // Two roads from v to s->heads, equal to float rounding (attention.h, mha_forward()):
    // - the (N, N) matrices kept (timm's lines, TODOs 4-7): when s->keep_matrices is true
    //   (mha_scratch_carve()'s default: the backward reads s->probs) or someone listens to
    //   the trace (trace_active(tr));
    // - otherwise nobody reads scores, scaled or probs (a model's inference: vit_memory.c sets
    //   keep_matrices false and may leave those buffers' pages untouched): TODO 8.
    if (s->keep_matrices || trace_active(tr)) {
        // TODO 4, scores (chapter 01): every query against every key in each of the B·H heads,
        //   s->scores[g] = q_g·k_gᵀ, (N, Dh)·(Dh, N) → (N, N): attention_scores(s->scores, s->q, s->k, B·H, N, Dh)
        trace_emit(tr, "scores", s->scores, 4, B, H, N, N);
        // TODO 5, scaled (chapter 02): × the scale (1/√Dh unless opt says otherwise), plus opt's masks:
        //   attention_scale_mask(s->scaled, s->scores, opt, B, H, N, Dh) — pass opt on, not NULL
        trace_emit(tr, "scaled", s->scaled, 4, B, H, N, N);
        // TODO 6, probs (chapter 03): softmax of every row of N keys; there are B·H·N rows:
        //   softmax(s->probs, s->scaled, B·H·N, N)
        //   Then the heads switched off (Hugging Face's head_mask of 0, vit_set_head_off()):
        //   w->head_off is (H) bools, or NULL for all on. When w->head_off[h] is true, head h's
        //   (N, N) probabilities become 0 in every sequence b (the block at s->probs + (b·H + h)·N·N):
        //   it looks nowhere, so its context is 0 and it adds nothing through proj.
        trace_emit(tr, "probs", s->probs, 4, B, H, N, N);
        // TODO 7, each head's weighted sum of its values (chapter 04), s->heads (B, H, N, Dh):
        //   s->heads = probs·V per head, (N, N)·(N, Dh): attention_context(s->heads, s->probs, s->v, B·H, N, Dh)
    } else {
        // TODO 8, the same s->heads online, without the (N, N) matrices (chapter 13); write
        //   nothing into s->scores, s->scaled or s->probs on this road:
        //   attention_online(s->heads, s->q, s->k, s->v, opt, B, H, N, Dh, MHA_KEY_BLOCK)
        //   then a head switched off (w->head_off[h], as in TODO 6) gets a context of 0: its
        //   (N, Dh) block s->heads + (b·H + h)·N·Dh in every sequence b.
    }

    // TODO 9, context (chapter 05): the heads side by side again
    //   (timm: (attn @ v).transpose(1, 2).reshape(B, N, D)):
    //   s->context = s->heads merged, (B, H, N, Dh) → (B, N, D): heads_merge()
    trace_emit(tr, "context", s->context, 3, B, N, D);

    // TODO 10, proj: the output projection mixes the heads (timm: self.proj(x)):
    //   out = context·proj_wᵀ + proj_b: ops_linear(out, s->context, w->proj_w, w->proj_b, B·N, D, D)
    memset(out, 0, sizeof(float) * (size_t)B * N * D); // placeholder: delete it
    (void)x, (void)w, (void)opt;
    trace_emit(tr, "proj", out, 3, B, N, D);
}
