#pragma once
// The two OpenBLAS calls the benchmarks use as their floor (declared here, as the
// library does, so only libopenblas is needed).
extern "C" {
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha,
                 const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
void openblas_set_num_threads(int n);
}
