// The weight gradient's partial sums (shaders/conv_wtile.comp writes them, conv_wgrad.comp's
// CONV_FROM_PARTIALS reads them): [128 lanes][result elements], in the compute type.
#if defined(CT_F64)
#define DT_PARTIAL DT_F64
#define PSIZE 8UL
#else
#define DT_PARTIAL DT_F32
#define PSIZE 4UL
#endif
