    // SCRATCH (docs/bench-runs/2026-12-03f): the element-by-element packer of 875c769.
        fn new_elementwise(src: &[f32], k: usize, n: usize, row_stride: usize, col_stride: usize) -> PackedB {
            let k_blocks = k.div_ceil(TILE_K);
            let n_pad = n.div_ceil(BLOCK) * BLOCK;
            let mut tiles = vec![0u16; n_pad / TILE * k_blocks * TILE_VALUES];
            for (t, tile) in tiles.chunks_exact_mut(TILE_VALUES).enumerate() {
                let (cb, kb) = (t / k_blocks, t % k_blocks);
                for (pr, row) in tile.chunks_exact_mut(2 * TILE).enumerate() {
                    for (jj, pair) in row.chunks_exact_mut(2).enumerate() {
                        let j = cb * TILE + jj;
                        for (p, v) in pair.iter_mut().enumerate() {
                            let i = kb * TILE_K + 2 * pr + p;
                            if i < k && j < n {
                                *v = bf16_bits(src[i * row_stride + j * col_stride]);
                            }
                        }
                    }
                }
            }
            PackedB { tiles, k, n, k_blocks, n_pad }
        }

    /// SCRATCH: `RAYON_NUM_THREADS=2 mt profile_pack --ignored --nocapture`.
    #[test]
    #[ignore]
    fn profile_pack() {
        let (heads, t, dh) = (32usize, 1208usize, 64usize);
        let ks = sample(heads * t * dh, 3);
        let vs = sample(heads * t * dh, 4);
        for round in 0..3 {
            for which in ["elementwise", "new"] {
                let mut walls = vec![];
                for _ in 0..15 {
                    let t0 = std::time::Instant::now();
                    let packed: Vec<(PackedB, PackedB)> = (0..heads)
                        .into_par_iter()
                        .map(|bh| {
                            let (k, v) = (&ks[bh * t * dh..][..t * dh], &vs[bh * t * dh..][..t * dh]);
                            if which == "new" {
                                (PackedB::new(k, dh, t, 1, dh), PackedB::new(v, t, dh, dh, 1))
                            } else {
                                (new_elementwise(k, dh, t, 1, dh), new_elementwise(v, t, dh, dh, 1))
                            }
                        })
                        .collect();
                    walls.push(t0.elapsed().as_secs_f64() * 1e3);
                    std::hint::black_box(&packed);
                }
                walls.sort_by(f64::total_cmp);
                println!("pack {which:<12} round {round}: median {:6.2} ms min {:6.2} ms (32 heads × 1208 × 64, K and V)", walls[7], walls[0]);
            }
        }
        let k = &ks[..t * dh];
        assert_eq!(PackedB::new(k, dh, t, 1, dh).tiles, new_elementwise(k, dh, t, 1, dh).tiles);
        let v = &vs[..t * dh];
        assert_eq!(PackedB::new(v, t, dh, dh, 1).tiles, new_elementwise(v, t, dh, dh, 1).tiles);
    }

