use tensor_dsl::dist::{mpi, DistTensor, Distribution, World};
use tensor_dsl::{tensor, Tensor};

fn main() {
    let universe = mpi::initialize().unwrap();
    let world = World::new(universe.world());
    let a = DistTensor::<f64>::zeros(&world, &[2, 3], Distribution::rows(2, world.size())).unwrap();
    let b = Tensor::<f64>::zeros([3]);
    tensor! { let c[i] = a[i, k] * b[k]; }
}
