#pragma once

// What the cdist backward kernel (Distance.metal) gets from its host code
// (operations/Distance.mm): batch, rows of x1, rows of x2, the vector length,
// and p - 1.
struct CdistBwdParams {
  long B;
  long P;
  long R;
  long D;
  float p_minus_1;
};
