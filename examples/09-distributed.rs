//! Distributed tensors: the same `tensor!` statements over `DistTensor`s spread across MPI
//! processes. A four-index transform (atomic-orbital integrals into the molecular-orbital
//! basis, four staged contractions) and a CCSD-like doubles update (a particle-particle
//! ladder, two Fock terms and a hole-hole ladder), each checked on rank 0 against the same
//! statements over whole tensors, with what every rank sent.
//!
//!     cargo build --release --features mpi --example 09-distributed
//!     mpirun -np 4 target/release/examples/09-distributed
//!
//! (As root in a container, Open MPI also wants `OMPI_ALLOW_RUN_AS_ROOT=1
//! OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`; with more ranks than cores, `--oversubscribe`.) Run
//! without `mpirun`, it is one rank.

mod common;

use common::{check, data};
use tensor_dsl::dist::{mpi, DistTensor, Distribution, Split, World};
use tensor_dsl::{tensor, Tensor};

/// `whole` (the same on every rank) spread by `distribution`.
fn spread(world: &World, whole: &Tensor<f64>, distribution: Distribution) -> DistTensor<f64> {
    DistTensor::from_fn(world, whole.shape(), distribution, |index| whole[index])
        .expect("a distribution over the world's ranks")
}

fn main() {
    let universe = mpi::initialize().expect("MPI starts");
    let world = World::new(universe.world());
    let p = world.size();
    let (n, occupied, virtuals) = (12, 4, 8);

    // Four-index transform: the integrals split over their first two indices on a 2-D grid,
    // the coefficients copied to every rank (each rank needs all of them).
    let g_ao = data(&[n, n, n, n], 1);
    let c_whole = data(&[n, n], 2);
    let g = spread(&world, &g_ao, Distribution::spread(4, p));
    let c = DistTensor::replicated(&world, &c_whole);
    let before = world.traffic();
    tensor! {
        let t1[a, b, cc, s] = g[a, b, cc, d] * c[d, s];
        let t2[a, b, r, s] = t1[a, b, cc, s] * c[cc, r];
        let t3[a, q, r, s] = t2[a, b, r, s] * c[b, q];
        let g_mo[pp, q, r, s] = t3[a, q, r, s] * c[a, pp];
    }
    let sent = world.traffic().bytes - before.bytes;
    tensor! {
        let w1[a, b, cc, s] = g_ao[a, b, cc, d] * c_whole[d, s];
        let w2[a, b, r, s] = w1[a, b, cc, s] * c_whole[cc, r];
        let w3[a, q, r, s] = w2[a, b, r, s] * c_whole[b, q];
        let expected[pp, q, r, s] = w3[a, q, r, s] * c_whole[a, pp];
    }
    if let Some(got) = g_mo.gather_to_root(0) {
        check(
            "four-index transform",
            got.as_slice(),
            expected.as_slice(),
            1e-12,
        );
        println!("  {p} ranks; rank 0 sent {} kB", sent / 1000);
    }

    // CCSD-like doubles update: amplitudes t[i, j, a, b] split over (i, j) on a 2-D grid,
    // the virtual-virtual integrals split over their first index, the Fock blocks everywhere.
    let (o, v) = (occupied, virtuals);
    let t_whole = data(&[o, o, v, v], 3);
    let vvvv_whole = data(&[v, v, v, v], 4);
    let oooo_whole = data(&[o, o, o, o], 5);
    let f_vv_whole = data(&[v, v], 6);
    let f_oo_whole = data(&[o, o], 7);
    let t = spread(&world, &t_whole, Distribution::spread(4, p));
    let vvvv = spread(&world, &vvvv_whole, Distribution::rows(4, p));
    let oooo = spread(&world, &oooo_whole, Distribution::rows(4, p));
    let f_vv = DistTensor::replicated(&world, &f_vv_whole);
    let f_oo = DistTensor::replicated(&world, &f_oo_whole);
    // The residual on a one-axis grid, split over its last index (another layout than t's).
    let mut splits = vec![Split::Whole; 4];
    splits[3] = Split::Block(0);
    let mut r = DistTensor::zeros(
        &world,
        &[o, o, v, v],
        Distribution::new(&[p], &splits).unwrap(),
    )
    .expect("a distribution over the world's ranks");
    let before = world.traffic();
    tensor! {
        r[i, j, a, b] = 0.5 * vvvv[a, b, cc, d] * t[i, j, cc, d]
            + f_vv[a, cc] * t[i, j, cc, b] - f_oo[k, i] * t[k, j, a, b]
            + 0.5 * oooo[k, l, i, j] * t[k, l, a, b];
    }
    let sent = world.traffic().bytes - before.bytes;
    let mut expected = Tensor::zeros([o, o, v, v]);
    tensor! {
        expected[i, j, a, b] = 0.5 * vvvv_whole[a, b, cc, d] * t_whole[i, j, cc, d]
            + f_vv_whole[a, cc] * t_whole[i, j, cc, b] - f_oo_whole[k, i] * t_whole[k, j, a, b]
            + 0.5 * oooo_whole[k, l, i, j] * t_whole[k, l, a, b];
    }
    if let Some(got) = r.gather_to_root(0) {
        check(
            "CCSD-like doubles update",
            got.as_slice(),
            expected.as_slice(),
            1e-12,
        );
        println!("  {p} ranks; rank 0 sent {} kB", sent / 1000);
    }
}
