    // SCRATCH (docs/bench-runs/2026-12-03f): the AVX-512 weights pass of 875c769.
    #[cfg(target_arch = "x86_64")]
    #[allow(dead_code, unsafe_op_in_unsafe_fn)]
    mod old_weights {
        use std::arch::x86_64::{
            __m256, __m256bh, __m256i, __m512, _mm_storeu_si128, _mm256_add_ps, _mm256_castpd_ps,
            _mm256_castsi256_si128, _mm256_setzero_ps, _mm256_storeu_ps, _mm256_storeu_si256,
            _mm512_castps_pd, _mm512_castps512_ps256, _mm512_cvtneps_pbh, _mm512_extractf64x4_pd,
            _mm512_loadu_ps, _mm512_maskz_loadu_ps, _mm512_max_ps, _mm512_reduce_max_ps,
            _mm512_set1_ps, _mm512_sub_ps,
        };

        use crate::flow::cpu_attention::exp_fast;
        use crate::flow::attention_avx512::exp16;
        use crate::flow::bf16_gemm::bf16_bits;

        pub(super) fn supported() -> bool {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bf16")
        }

        /// 16 bf16 values as plain bits.
        fn bits(v: __m256bh) -> __m256i {
            // SAFETY: both are 32 plain bytes.
            unsafe { std::mem::transmute::<__m256bh, __m256i>(v) }
        }

        /// The upper eight lanes.
        #[inline]
        #[target_feature(enable = "avx512f")]
        fn upper(v: __m512) -> __m256 {
            _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)))
        }

        /// The weights `exp(s − max)` of `row` rounded to bf16 into `probs` (its padding after the
        /// row zeroed); returns their f32 sum.
        ///
        /// # Safety
        /// The CPU has AVX512F and AVX512-BF16 ([`supported`]).
        #[target_feature(enable = "avx512f,avx512bf16")]
        pub(super) unsafe fn exp_row_to_bf16(row: &[f32], probs: &mut [u16]) -> f32 {
            let n = row.len();
            assert!(probs.len() >= n, "bf16 weights: {} slots for {n} weights", probs.len());
            let (src, dst) = (row.as_ptr(), probs.as_mut_ptr());
            // SAFETY (every load and store below): lanes i..i + 16 (or + 8) with i + 16 ≤ n (or
            // i + 8 ≤ n) of `row` and `probs`, both at least n long.
            let mut vmax = _mm512_set1_ps(f32::NEG_INFINITY);
            let mut i = 0;
            while i + 16 <= n {
                vmax = _mm512_max_ps(vmax, unsafe { _mm512_loadu_ps(src.add(i)) });
                i += 16;
            }
            let max = row[i..].iter().fold(_mm512_reduce_max_ps(vmax), |m, &x| m.max(x));
            let vm = _mm512_set1_ps(max);
            // Eight partial sums, each chunk of eight weights added in turn (`sum_f32`'s order).
            let mut acc = _mm256_setzero_ps();
            let mut i = 0;
            while i + 16 <= n {
                let e = exp16(_mm512_sub_ps(unsafe { _mm512_loadu_ps(src.add(i)) }, vm));
                acc = _mm256_add_ps(_mm256_add_ps(acc, _mm512_castps512_ps256(e)), upper(e));
                unsafe { _mm256_storeu_si256(dst.add(i).cast(), bits(_mm512_cvtneps_pbh(e))) };
                i += 16;
            }
            if i + 8 <= n {
                let e = exp16(_mm512_sub_ps(unsafe { _mm512_maskz_loadu_ps(0x00ff, src.add(i)) }, vm));
                acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e));
                let bf = _mm256_castsi256_si128(bits(_mm512_cvtneps_pbh(e)));
                unsafe { _mm_storeu_si128(dst.add(i).cast(), bf) };
                i += 8;
            }
            let mut tail = [0f32; 8];
            for (j, &x) in row[i..].iter().enumerate() {
                tail[j] = exp_fast(x - max);
                probs[i + j] = bf16_bits(tail[j]);
            }
            probs[n..].fill(0);
            let mut lanes = [0f32; 8];
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
            lanes.iter().sum::<f32>() + tail[..n - i].iter().sum::<f32>()
        }
    }

    /// SCRATCH: `RAYON_NUM_THREADS=2 mt profile_weights --ignored --nocapture`.
    #[test]
    #[ignore]
    #[cfg(target_arch = "x86_64")]
    fn profile_weights() {
        if !avx512_weights::supported() {
            return;
        }
        let (rows, t) = (2 * 16 * 1208usize, 1208usize);
        let scores: Vec<f32> = seeded((1, 1, rows, t), 9, 3.0).flatten_all().unwrap().to_vec1().unwrap();
        let stride = t + 40;
        for round in 0..3 {
            for which in ["old", "new"] {
                let mut walls = vec![];
                for _ in 0..7 {
                    let mut probs = vec![0u16; 64 * stride];
                    let t0 = std::time::Instant::now();
                    scores.par_chunks(64 * t).for_each_init(
                        || vec![0u16; 64 * stride],
                        |probs, block| {
                            for (row, p) in block.chunks_exact(t).zip(probs.chunks_exact_mut(stride)) {
                                let s = unsafe {
                                    if which == "new" {
                                        avx512_weights::exp_row_to_bf16(row, p)
                                    } else {
                                        old_weights::exp_row_to_bf16(row, p)
                                    }
                                };
                                std::hint::black_box(s);
                            }
                        },
                    );
                    walls.push(t0.elapsed().as_secs_f64() * 1e3);
                    std::hint::black_box(&mut probs);
                }
                walls.sort_by(f64::total_cmp);
                println!("weights {which:<4} round {round}: median {:6.2} ms min {:6.2} ms (2 × 16 × 1208 rows of 1208)", walls[3], walls[0]);
            }
        }
    }

    /// SCRATCH (docs/bench-runs/2026-12-03f): `RAYON_NUM_THREADS=2 mt profile_bf16 --ignored --nocapture`.
    #[test]
    #[ignore]
    fn profile_bf16() {
        if !bf16_gemm::available() {
            eprintln!("no bf16 kernel");
            return;
        }
        for t in [1208usize, 600, 1208] {
            let (b, h, dh) = (2, 16, 64);
            let q = seeded((b, h, t, dh), 40, 1.0 / 8.0);
            let (k, v) = (seeded((b, h, t, dh), 41, 1.0), seeded((b, h, t, dh), 42, 1.0));
            let reference = attend(&q, &k, &v).unwrap();
            let reps = 9;
            let mut walls = vec![];
            let mut dev = 0f32;
            for _ in 0..reps {
                let t0 = std::time::Instant::now();
                let out = attend_bf16(&q, &k, &v).unwrap();
                walls.push(t0.elapsed().as_secs_f64() * 1e3);
                dev = max_abs_diff(&out, &reference);
            }
            walls.sort_by(f64::total_cmp);
            println!(
                "variant new t {t} median {:7.2} ms min {:7.2} | dev {dev:.2e}",
                walls[reps / 2], walls[0]
            );
        }
    }

