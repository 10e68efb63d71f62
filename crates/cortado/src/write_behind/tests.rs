use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use super::*;

type Log = Arc<Mutex<Vec<Vec<(u32, Write<u32>)>>>>;

/// A writer whose flushes are logged (successful or not) and fail while `failing` is above 0
/// (counting down); failed batches go to the second log.
fn writer(builder: WriteBehindBuilder, failing: u32) -> (WriteBehind<u32, u32>, Log, Log) {
    let (flushed, failed) = (Log::default(), Log::default());
    let failing = Arc::new(AtomicU32::new(failing));
    let (f, l) = (flushed.clone(), failed.clone());
    let writer = builder
        .build(
            move |batch: &[(u32, Write<u32>)]| {
                if failing
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok()
                {
                    return Err("store down");
                }
                f.lock().unwrap().push(batch.to_vec());
                Ok(())
            },
            move |batch: &[(u32, Write<u32>)], _: &FlushFailure<&str>| {
                l.lock().unwrap().push(batch.to_vec());
            },
        )
        .unwrap();
    (writer, flushed, failed)
}

fn fast() -> WriteBehindBuilder {
    WriteBehind::builder().retries(2, Duration::from_millis(1), Duration::from_millis(2))
}

#[test]
fn write_behind_writes_flush_in_batches_with_last_write_per_key() {
    let (writer, flushed, failed) =
        writer(fast().batch_size(10).max_delay(Duration::from_secs(5)), 0);
    for i in 0..25 {
        writer.put(i % 20, i);
    }
    writer.delete(3);
    writer.flush();
    let batches = flushed.lock().unwrap().clone();
    assert!(batches.iter().all(|b| b.len() <= 10), "{batches:?}");
    let mut last = HashMap::new();
    for (key, write) in batches.into_iter().flatten() {
        last.insert(key, write);
    }
    assert_eq!(last.len(), 20);
    assert_eq!(last[&4], Write::Put(24));
    assert_eq!(last[&3], Write::Delete);
    assert_eq!(last[&5], Write::Put(5));
    assert!(failed.lock().unwrap().is_empty());
}

#[test]
fn write_behind_failed_flush_retried_until_it_succeeds() {
    let (writer, flushed, failed) = writer(fast(), 2);
    writer.put(1, 1);
    writer.flush();
    assert_eq!(*flushed.lock().unwrap(), vec![vec![(1, Write::Put(1))]]);
    assert!(failed.lock().unwrap().is_empty());
}

#[test]
fn write_behind_batch_failing_every_retry_goes_to_listener() {
    let (writer, flushed, failed) = writer(fast(), 3);
    writer.put(1, 1);
    writer.put(2, 2);
    writer.flush();
    assert!(flushed.lock().unwrap().is_empty());
    assert_eq!(
        *failed.lock().unwrap(),
        vec![vec![(1, Write::Put(1)), (2, Write::Put(2))]]
    );
    // The writer goes on with the next batch.
    writer.put(3, 3);
    writer.flush();
    assert_eq!(*flushed.lock().unwrap(), vec![vec![(3, Write::Put(3))]]);
}

#[test]
fn write_behind_drop_flushes_what_is_queued() {
    let (writer, flushed, _) = writer(fast().max_delay(Duration::from_secs(60)), 0);
    for i in 0..50 {
        writer.put(i, i);
    }
    drop(writer);
    let keys: usize = flushed.lock().unwrap().iter().map(Vec::len).sum();
    assert_eq!(keys, 50);
}

#[test]
fn write_behind_full_queue_pushes_back() {
    let gate = Arc::new(Barrier::new(2));
    let g = gate.clone();
    let writer = WriteBehind::builder()
        .queue_capacity(2)
        .batch_size(1)
        .build(
            move |_: &[(u32, Write<u32>)]| {
                g.wait();
                Ok::<(), ()>(())
            },
            |_: &[(u32, Write<u32>)], _: &FlushFailure<()>| {},
        )
        .unwrap();
    // The writer takes the first write and blocks in its flush; two more fill the queue.
    writer.put(0, 0);
    let mut queued = 1;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while queued < 3 && std::time::Instant::now() < deadline {
        if writer.try_put(queued, queued).is_ok() {
            queued += 1;
        }
    }
    assert_eq!(queued, 3);
    assert_eq!(
        writer.try_put(9, 9),
        Err((9, 9)),
        "a full queue hands the write back"
    );
    for _ in 0..3 {
        gate.wait();
    }
    writer.shutdown();
}

#[test]
fn write_behind_panicking_flush_reported_not_lost() {
    let failed = Log::default();
    let l = failed.clone();
    let writer = fast()
        .build(
            |_: &[(u32, Write<u32>)]| -> Result<(), ()> { panic!("driver bug") },
            move |batch: &[(u32, Write<u32>)], failure: &FlushFailure<()>| {
                assert_eq!(*failure, FlushFailure::Panicked);
                l.lock().unwrap().push(batch.to_vec());
            },
        )
        .unwrap();
    writer.put(1, 1);
    writer.shutdown();
    assert_eq!(*failed.lock().unwrap(), vec![vec![(1, Write::Put(1))]]);
}

#[test]
fn write_behind_zero_sizes_rejected() {
    let build = |b: WriteBehindBuilder| {
        b.build(
            |_: &[(u32, Write<u32>)]| Ok::<(), ()>(()),
            |_: &[(u32, Write<u32>)], _: &FlushFailure<()>| {},
        )
        .map(drop)
    };
    assert_eq!(
        build(WriteBehind::builder().batch_size(0)),
        Err(WriteBehindError::ZeroSize)
    );
    assert_eq!(
        build(WriteBehind::builder().queue_capacity(0)),
        Err(WriteBehindError::ZeroSize)
    );
}
