use tensor_dsl::dist::{mpi, DistTensor, Distribution, World};
use tensor_dsl::tensor;

fn main() {
    let universe = mpi::initialize().unwrap();
    let world = World::new(universe.world());
    let a = DistTensor::<f64>::zeros(&world, &[4, 4], Distribution::rows(2, world.size())).unwrap();
    tensor! { let l[i, j] = cholesky(a[i, j]); }
}
