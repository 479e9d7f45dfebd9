// The exact (erf) form of GELU, x * Phi(x), shared by the GEMM epilogues and the
// standalone activation kernel.

// erfc(z) with relative error below 1.2e-7 everywhere (Numerical Recipes' erfcc,
// a Chebyshev fit of erfc(z) exp(z^2)); precise keeps the fit's evaluation order.
precise float erfc_fit(float z) {
  float a = abs(z);
  float t = 1.0 / (1.0 + 0.5 * a);
  float poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
               t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  float r = t * exp(-a * a + poly);
  return z >= 0.0 ? r : 2.0 - r;
}

float gelu(float v) { return 0.5 * v * erfc_fit(-v * 0.70710678118654752); }
