// nvcuda::wmma for the cpu backend's tests of the tensor-core kernels (kernels/gemm_mma.py, conv_gemm.py): each
// lane holds a whole fragment, loads and stores it whole and multiplies in float. The API hides a fragment's
// layout from the kernel, so a kernel written against it cannot tell; what this checks is the kernel's own
// indexing (tiles, edges, strides, the staged epilogue), not the hardware's rounding.
#include <cstring>
#include <type_traits>
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
namespace precision {
struct tf32 {};
}
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K>
struct fragment_shape;
template <int M, int N, int K>
struct fragment_shape<matrix_a, M, N, K> { static constexpr int rows = M, cols = K; };
template <int M, int N, int K>
struct fragment_shape<matrix_b, M, N, K> { static constexpr int rows = K, cols = N; };
template <int M, int N, int K>
struct fragment_shape<accumulator, M, N, K> { static constexpr int rows = M, cols = N; };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
    static constexpr int rows = fragment_shape<Use, M, N, K>::rows, cols = fragment_shape<Use, M, N, K>::cols;
    static constexpr int num_elements = rows * cols;
    float x[rows * cols];  // row-major
};

inline float __float_to_tf32(float v) {  // nearest even at 10 mantissa bits; inf and NaN stay
    unsigned u;
    std::memcpy(&u, &v, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
    std::memcpy(&v, &u, 4);
    return v;
}

template <class Use, int M, int N, int K, class T, class L>
void load_matrix_sync(fragment<Use, M, N, K, T, L>& f, const float* p, unsigned ldm) {
    using F = fragment<Use, M, N, K, T, L>;
    for (int r = 0; r < F::rows; ++r)
        for (int c = 0; c < F::cols; ++c)
            f.x[r * F::cols + c] = std::is_same<L, col_major>::value ? p[r + (size_t)c * ldm] : p[(size_t)r * ldm + c];
}

template <int M, int N, int K, class T>
void fill_fragment(fragment<accumulator, M, N, K, T>& f, float v) {
    for (float& e : f.x) e = v;
}

template <int M, int N, int K, class TA, class LA, class LB, class TC>
void mma_sync(fragment<accumulator, M, N, K, TC>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
              const fragment<matrix_b, M, N, K, TA, LB>& b, const fragment<accumulator, M, N, K, TC>& c) {
    float out[M * N];
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float s = c.x[i * N + j];
            for (int k = 0; k < K; ++k) s += a.x[i * K + k] * b.x[k * N + j];
            out[i * N + j] = s;
        }
    std::memcpy(d.x, out, sizeof out);  // d may be c
}

template <int M, int N, int K, class T>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t layout) {
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c) (layout == mem_row_major ? p[(size_t)r * ldm + c] : p[r + (size_t)c * ldm]) = f.x[r * N + c];
}
}  // namespace wmma
}  // namespace nvcuda
