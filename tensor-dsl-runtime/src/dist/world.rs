//! An MPI communicator → the world distributed tensors live in: its ranks, the collective
//! byte transfers the tensors are moved by, and counters of what this rank sent. Invariant:
//! every transfer is collective and its counts are known on both sides before it starts (each
//! side computes them from the same distributions), so no rank waits on a size message.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::element::Element;

/// The processes a distributed tensor is spread over: an MPI communicator, shared by every
/// tensor made in it, with the counts of messages and bytes this rank has sent to others.
#[derive(Clone)]
pub struct World(Rc<Inner>);

struct Inner {
    comm: SimpleCommunicator,
    messages: Cell<u64>,
    bytes: Cell<u64>,
    /// Element buffers kept between moves (see [`World::buffer`]).
    pool: RefCell<Vec<Box<dyn Any>>>,
}

/// How many buffers the pool keeps: a move takes at most three at once (what it sends, what it
/// receives, the new block), and a step moves each operand in turn.
const POOLED: usize = 8;

/// What a rank sent to other ranks: messages (one per peer per transfer with data for it) and
/// bytes. A rank's transfers to itself are copies, not counted. Collective calls are counted
/// as if each rank sent straight to every peer that receives its data (MPI's own algorithms
/// may route through other ranks, as a broadcast's tree does).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Messages sent.
    pub messages: u64,
    /// Bytes sent.
    pub bytes: u64,
}

impl World {
    /// The world of `comm`'s processes (such as `mpi::initialize()?.world()`).
    ///
    /// From then on a panic on any rank, once reported, aborts every rank (`MPI_Abort`): the
    /// others may be waiting for it in a collective call, and a panic that unwinds would
    /// finalize MPI on its rank and leave them waiting until `mpirun`'s timeout.
    pub fn new(comm: SimpleCommunicator) -> World {
        static ABORT_ON_PANIC: std::sync::Once = std::sync::Once::new();
        ABORT_ON_PANIC.call_once(|| {
            let report = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                report(info);
                if mpi::environment::is_initialized() && !mpi::environment::is_finalized() {
                    SimpleCommunicator::world().abort(101);
                }
            }));
        });
        World(Rc::new(Inner {
            comm,
            messages: Cell::new(0),
            bytes: Cell::new(0),
            pool: RefCell::new(Vec::new()),
        }))
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.0.comm.rank() as usize
    }

    /// How many processes there are.
    pub fn size(&self) -> usize {
        self.0.comm.size() as usize
    }

    /// What this rank has sent so far.
    pub fn traffic(&self) -> Traffic {
        Traffic {
            messages: self.0.messages.get(),
            bytes: self.0.bytes.get(),
        }
    }

    /// `len` elements (zeros) in memory an earlier move used and gave back, where one is
    /// large enough: a fresh allocation's pages are each faulted in on first touch, which on
    /// a virtual machine costs more than copying into them. Never an empty allocation (MPI
    /// needs real addresses, see `receive_buffer`).
    pub(crate) fn buffer<T: Element>(&self, len: usize) -> Vec<T> {
        let mut pool = self.0.pool.borrow_mut();
        let fits = pool
            .iter()
            .enumerate()
            .filter_map(|(at, kept)| {
                let kept = kept.downcast_ref::<Vec<T>>()?;
                (kept.capacity() >= len).then_some((kept.capacity(), at))
            })
            .min();
        let mut values = match fits {
            Some((_, at)) => *pool
                .swap_remove(at)
                .downcast::<Vec<T>>()
                .expect("checked above"),
            None => Vec::with_capacity(len.max(1)),
        };
        values.clear();
        values.resize(len, T::ZERO);
        values
    }

    /// Gives `values`' memory back for later moves (the largest [`POOLED`] buffers are kept).
    pub(crate) fn recycle<T: Element>(&self, values: Vec<T>) {
        if values.capacity() == 0 {
            return;
        }
        let mut pool = self.0.pool.borrow_mut();
        pool.push(Box::new(values));
        if pool.len() > POOLED {
            let smallest = (0..pool.len())
                .min_by_key(|&at| bytes_of(&pool[at]))
                .expect("not empty");
            pool.swap_remove(smallest);
        }
    }

    /// Waits until every rank has reached this call.
    pub fn barrier(&self) {
        self.0.comm.barrier();
    }

    fn count(&self, sends: impl IntoIterator<Item = (usize, usize)>) {
        for (peer, bytes) in sends {
            if peer != self.rank() && bytes > 0 {
                self.0.messages.set(self.0.messages.get() + 1);
                self.0.bytes.set(self.0.bytes.get() + bytes as u64);
            }
        }
    }

    /// Checks that every rank passes the same `key` (a statement's plan), and if not, panics
    /// on every rank with each rank's `describe()` (so the job aborts naming the statements
    /// instead of hanging in mismatched transfers). Not counted in [`Traffic`]: a check, not
    /// data.
    #[track_caller]
    pub(crate) fn check_same(&self, key: u64, describe: impl Fn() -> String) {
        let mut keys = vec![0u64; self.size()];
        self.0.comm.all_gather_into(&key, &mut keys[..]);
        if keys.iter().all(|&k| k == keys[0]) {
            return;
        }
        let text = describe();
        let mut lengths = vec![0i32; self.size()];
        let length = i32::try_from(text.len()).expect("a short description");
        self.0.comm.all_gather_into(&length, &mut lengths[..]);
        let mut bytes = receive_buffer(lengths.iter().map(|&n| n as usize).sum());
        {
            let displs = displacements(&lengths);
            let mut into = PartitionMut::new(&mut bytes[..], &lengths[..], &displs[..]);
            self.0
                .comm
                .all_gather_varcount_into(text.as_bytes(), &mut into);
        }
        let mut at = 0;
        let mut lines = Vec::new();
        for (rank, &n) in lengths.iter().enumerate() {
            let n = n as usize;
            let text = String::from_utf8_lossy(&bytes[at..at + n]);
            lines.push(format!("  rank {rank}: {text}"));
            at += n;
        }
        panic!(
            "the ranks reached different statements (every rank must run the same statements \
             over distributed tensors, in the same order):\n{}",
            lines.join("\n")
        );
    }

    /// Every rank sends `send[d]` to rank `d` and receives `receive[s]` elements from rank
    /// `s` (counts both sides agree on), concatenated in rank order.
    pub(crate) fn all_to_all<T: Element>(&self, send: &[Vec<T>], receive: &[usize]) -> Vec<T> {
        let counts: Vec<usize> = send.iter().map(Vec::len).collect();
        self.all_to_all_flat(&send.concat(), &counts, receive)
    }

    /// [`all_to_all`](Self::all_to_all) with what is sent already concatenated in rank
    /// order, `counts[d]` elements for rank `d`: received straight into the returned
    /// elements, with no copy on either side but MPI's own.
    pub(crate) fn all_to_all_flat<T: Element>(
        &self,
        send: &[T],
        counts: &[usize],
        receive: &[usize],
    ) -> Vec<T> {
        let size = std::mem::size_of::<T>();
        let send_counts: Vec<usize> = counts.iter().map(|&n| n * size).collect();
        self.count(send_counts.iter().copied().enumerate());
        let send_counts = to_int(&send_counts);
        let send_displs = displacements(&send_counts);
        let receive_counts = to_int(&receive.iter().map(|&n| n * size).collect::<Vec<_>>());
        let receive_displs = displacements(&receive_counts);
        let mut out = self.buffer::<T>(receive.iter().sum());
        {
            let sent = Partition::new(as_bytes(send), &send_counts[..], &send_displs[..]);
            let bytes = as_bytes_mut(&mut out);
            let mut into = PartitionMut::new(bytes, &receive_counts[..], &receive_displs[..]);
            self.0.comm.all_to_all_varcount_into(&sent, &mut into);
        }
        out
    }

    /// Every rank sends `send` to `root`, which receives `counts[s]` elements from rank `s`,
    /// concatenated in rank order; `None` elsewhere.
    pub(crate) fn gather<T: Element>(
        &self,
        root: usize,
        send: &[T],
        counts: &[usize],
    ) -> Option<Vec<T>> {
        let size = std::mem::size_of::<T>();
        self.count([(root, std::mem::size_of_val(send))]);
        let process = self.0.comm.process_at_rank(root as i32);
        if self.rank() != root {
            process.gather_varcount_into(as_bytes(send));
            return None;
        }
        let counts = to_int(&counts.iter().map(|&n| n * size).collect::<Vec<_>>());
        let displs = displacements(&counts);
        let total: usize = counts.iter().map(|&n| n as usize).sum();
        let mut out = receive_buffer(total);
        {
            let mut into = PartitionMut::new(&mut out[..], &counts[..], &displs[..]);
            process.gather_varcount_into_root(as_bytes(send), &mut into);
        }
        Some(from_bytes(&out))
    }

    /// `root` sends `parts[d]` to each rank `d` (`None` elsewhere); every rank receives its
    /// `count` elements.
    pub(crate) fn scatter<T: Element>(
        &self,
        root: usize,
        parts: Option<&[Vec<T>]>,
        count: usize,
    ) -> Vec<T> {
        let size = std::mem::size_of::<T>();
        let process = self.0.comm.process_at_rank(root as i32);
        let mut out = receive_buffer(count * size);
        match parts {
            Some(parts) if self.rank() == root => {
                let counts: Vec<usize> = parts.iter().map(|part| part.len() * size).collect();
                self.count(counts.iter().copied().enumerate());
                let counts = to_int(&counts);
                let displs = displacements(&counts);
                let flat = parts.concat();
                let sent = Partition::new(as_bytes(&flat), &counts[..], &displs[..]);
                process.scatter_varcount_into_root(&sent, &mut out[..]);
            }
            _ => process.scatter_varcount_into(&mut out[..]),
        }
        from_bytes(&out)
    }

    /// `root`'s `value` on every rank.
    pub(crate) fn broadcast(&self, root: usize, value: u64) -> u64 {
        let mut value = value;
        if self.rank() == root {
            self.count((0..self.size()).map(|peer| (peer, 8)));
        }
        self.0
            .comm
            .process_at_rank(root as i32)
            .broadcast_into(&mut value);
        value
    }
}

/// Byte counts as MPI's `int`s. A count past `i32::MAX` bytes (2 GiB in one message) is
/// beyond one MPI call; tensors that large are split into more ranks.
fn to_int(counts: &[usize]) -> Vec<i32> {
    counts
        .iter()
        .map(|&n| {
            i32::try_from(n).expect("a message of at most 2 GiB: spread the tensor over more ranks")
        })
        .collect()
}

fn displacements(counts: &[i32]) -> Vec<i32> {
    counts
        .iter()
        .scan(0i32, |at, &n| {
            let start = *at;
            *at += n;
            Some(start)
        })
        .collect()
}

/// A buffer of `len` bytes whose address is a real allocation even when `len` is 0: MPI
/// takes two empty buffers at the same dangling address for one buffer used in place, which
/// is an error in a collective.
fn receive_buffer(len: usize) -> Vec<u8> {
    let mut buffer = Vec::with_capacity(len.max(1));
    buffer.resize(len, 0);
    buffer
}

/// The bytes a pooled buffer holds room for (for choosing which to drop).
fn bytes_of(kept: &dyn Any) -> usize {
    macro_rules! sized {
        ($($t:ty),*) => {$(
            if let Some(values) = kept.downcast_ref::<Vec<$t>>() {
                return values.capacity() * std::mem::size_of::<$t>();
            }
        )*};
    }
    sized!(f32, f64, i32, i64, crate::c32, crate::c64);
    0
}

/// The bytes of `values`, to receive into.
fn as_bytes_mut<T: Element>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: `T` is plain data without padding (see `as_bytes`) and every bit pattern is a
    // valid value of each `Element` type (floats, integers and pairs of floats), so any bytes
    // written through this view leave valid values; the view covers exactly the values'
    // memory, borrowed mutably for as long as it lives (a slice's pointer is non-null and
    // aligned even when empty).
    unsafe {
        std::slice::from_raw_parts_mut(
            values.as_mut_ptr().cast::<u8>(),
            std::mem::size_of_val(values),
        )
    }
}

/// The address an empty send buffer is given (see [`receive_buffer`]).
static EMPTY: [u8; 1] = [0];

fn as_bytes<T: Element>(values: &[T]) -> &[u8] {
    if values.is_empty() {
        return &EMPTY[..0];
    }
    // SAFETY: every `Element` (sealed: f32, f64, i32, i64 and `Complex` of f32 or f64, a
    // `repr(C)` pair) is plain data without padding, so its bytes are initialised; the slice
    // covers exactly the values' memory and borrows it.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
}

fn from_bytes<T: Element>(bytes: &[u8]) -> Vec<T> {
    let size = std::mem::size_of::<T>();
    assert_eq!(bytes.len() % size, 0, "whole elements");
    let mut values = vec![T::ZERO; bytes.len() / size];
    as_bytes_mut(&mut values).copy_from_slice(bytes);
    values
}
