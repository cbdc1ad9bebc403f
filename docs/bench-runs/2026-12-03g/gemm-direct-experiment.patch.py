p='/work/main/src/bench/gemm.rs'
s=open(p).read()
s=s.replace('''            let gf = |t: f64| flop / t / 1e9;''','''            let gf = |t: f64| flop / t / 1e9;
            if let Some(kernel) = lectern_model::hift::conv_direct::Kernel::widest() {
                use lectern_model::hift::conv_direct as cd;
                use rayon::prelude::*;
                let wh = w.flatten_all()?.to_vec1::<f32>()?;
                let xh = x.flatten_all()?.to_vec1::<f32>()?;
                let panels = cd::Panels::pack(&wh, 1, outd, inp);
                let zeros = vec![0f32; outd];
                let g = lectern_model::hift::kernels::ConvGeometry { k: 1, dilation: 1, pad_left: 0, pad_right: 0 };
                let mut xt = vec![0f32; rows * inp];
                let mut yt = vec![0f32; rows * outd];
                let mut y = vec![0f32; rows * outd];
                let t = best(reps, || {
                    xt.par_chunks_mut(rows).enumerate().for_each(|(c, dst)| {
                        for (r, d) in dst.iter_mut().enumerate() { *d = xh[r * inp + c]; }
                    });
                    cd::conv1d(kernel, &xt, rows, &panels, &zeros, g, None, lectern_model::hift::cpu::ConvInput::Plain, &mut yt);
                    y.par_chunks_mut(outd).enumerate().for_each(|(r, dst)| {
                        for (o, d) in dst.iter_mut().enumerate() { *d = yt[o * rows + r]; }
                    });
                    Ok(())
                })?;
                let got = Tensor::from_vec(y.clone(), (rows, outd), &Device::Cpu)?;
                let d = (&got - &want)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
                println!("   direct {kernel:?} {name} {rows}: {:.1} GF/s (max diff {d:.1e})", gf(t));
            }''')
open(p,'w').write(s)
