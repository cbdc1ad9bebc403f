//! No output device → the file sink: what would have played lands in a WAV, the status says
//! so, and nothing crashes.

use std::sync::Arc;
use std::time::Duration;

use lectern::audio::player::{
    AudioCommand, Cue, DeviceChoice, Playback, Player, PlayerConfig, PlayerStatus, SinkInfo,
};
use lectern::audio::wav;

/// A take with a recognisable, non-repeating shape (nothing like silence).
fn take(n: usize, salt: u32) -> Vec<f32> {
    (0..n as u32)
        .map(|i| {
            let h = (i.wrapping_mul(2_654_435_761) ^ salt).rotate_left(7);
            (h % 2000) as f32 / 2000.0 - 0.5
        })
        .collect()
}

fn find(hay: &[f32], needle: &[f32]) -> Option<usize> {
    (0..=hay.len().checked_sub(needle.len())?).find(|&i| hay[i..i + needle.len()] == *needle)
}

/// Plays `takes` through a player opened with `cfg`; returns its first status and the WAV.
fn play_and_collect(cfg: PlayerConfig, takes: &[Vec<f32>]) -> (PlayerStatus, Vec<f32>) {
    let path = cfg.fallback_wav.clone();
    let player = Player::open(cfg).unwrap();
    let status = player.status();
    for (i, t) in takes.iter().enumerate() {
        player.command(AudioCommand::Enqueue(Cue {
            take_id: i as u64 + 1,
            segment_id: 10 + i as u64,
            samples: Arc::new(t.clone()),
        }));
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(player.wait_idle(Duration::from_secs(20)), "playback did not finish");
    drop(player); // finalises the WAV
    (status, wav::read(&path).unwrap())
}

#[test]
fn file_sink_writes_the_played_samples_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.wav");
    let cfg = PlayerConfig {
        device: DeviceChoice::File,
        fallback_wav: path.clone(),
        ..PlayerConfig::default()
    };
    let a = take(4800, 1);
    let b = take(2880, 2);
    let player = Player::open(cfg).unwrap();
    let s = player.status();
    assert_eq!(s.sink, SinkInfo::File { path: path.clone() });
    assert!(s.notice.as_deref().is_some_and(|n| n.contains("out.wav")), "{s:?}");
    for (i, t) in [&a, &b].into_iter().enumerate() {
        player.command(AudioCommand::Enqueue(Cue {
            take_id: i as u64 + 1,
            segment_id: 7,
            samples: Arc::new(t.clone()),
        }));
    }
    std::thread::sleep(Duration::from_millis(30));
    assert!(player.status().now_playing.is_some());
    assert!(player.wait_idle(Duration::from_secs(20)));
    assert_eq!(player.status().underruns, 0);
    drop(player);
    let got = wav::read(&path).unwrap();
    let mut want = a.clone();
    want.extend_from_slice(&b);
    assert_eq!(got, want, "the file holds exactly what was played, bit for bit");
}

#[test]
fn missing_device_falls_back_to_the_file_sink_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fallback.wav");
    let cfg = PlayerConfig {
        device: DeviceChoice::Named("no-such-device-xyz".into()),
        fallback_wav: path.clone(),
        ..PlayerConfig::default()
    };
    let t = take(2400, 3);
    let (status, got) = play_and_collect(cfg, std::slice::from_ref(&t));
    assert_eq!(status.sink, SinkInfo::File { path: path.clone() });
    let notice = status.notice.unwrap_or_default();
    assert!(notice.contains("no audio output") && notice.contains("fallback.wav"), "{notice}");
    assert_eq!(find(&got, &t), Some(0));
}

#[test]
fn stop_and_play_replace_what_is_queued() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stop.wav");
    let cfg = PlayerConfig {
        device: DeviceChoice::File,
        fallback_wav: path.clone(),
        ..PlayerConfig::default()
    };
    let player = Player::open(cfg).unwrap();
    let long = take(24_000 * 5, 4);
    let short = take(1200, 5);
    player.command(AudioCommand::Enqueue(Cue {
        take_id: 1,
        segment_id: 1,
        samples: Arc::new(long.clone()),
    }));
    std::thread::sleep(Duration::from_millis(100));
    player.command(AudioCommand::Play(Cue {
        take_id: 2,
        segment_id: 2,
        samples: Arc::new(short.clone()),
    }));
    assert!(player.wait_idle(Duration::from_secs(10)));
    drop(player);
    let got = wav::read(&path).unwrap();
    assert!(got.len() < long.len(), "the long take was cut short");
    assert_eq!(&got[got.len() - short.len()..], &short[..], "then the new take played whole");
    assert_eq!(&got[..1000], &long[..1000]);
}

#[test]
fn an_empty_cue_does_not_stop_the_transport() {
    // A zero-length take with no pause is an empty cue: it used to stay at the front of the
    // queue, hide the cue playing behind it and make the transport say "stopped".
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.wav");
    let cfg = PlayerConfig {
        device: DeviceChoice::File,
        fallback_wav: path.clone(),
        ..PlayerConfig::default()
    };
    let (a, b) = (take(2400, 1), take(24_000, 2));
    let player = Player::open(cfg).unwrap();
    for (i, t) in [&a, &Vec::new(), &b].into_iter().enumerate() {
        player.command(AudioCommand::Enqueue(Cue {
            take_id: i as u64 + 1,
            segment_id: 10 + i as u64,
            samples: Arc::new(t.clone()),
        }));
    }
    // Past the first cue (0.1 s) and the empty one, well inside the last (1 s).
    std::thread::sleep(Duration::from_millis(500));
    let s = player.status();
    assert_eq!(s.state, lectern::audio::player::PlayState::Playing, "{s:?}");
    assert_eq!(s.now_playing.map(|n| n.take_id), Some(3), "{s:?}");
    assert!(player.wait_idle(Duration::from_secs(20)));
    drop(player);
    let got = wav::read(&path).unwrap();
    assert_eq!(got, [a, b].concat());
}

#[test]
fn paused_playback_sleeps_until_a_command_comes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("paused.wav");
    let cfg = PlayerConfig {
        device: DeviceChoice::File,
        fallback_wav: path.clone(),
        ..PlayerConfig::default()
    };
    let t = take(24_000 * 5, 4);
    let player = Player::open(cfg).unwrap();
    player.command(AudioCommand::Enqueue(Cue {
        take_id: 1,
        segment_id: 1,
        samples: Arc::new(t.clone()),
    }));
    std::thread::sleep(Duration::from_millis(200));
    player.command(AudioCommand::Pause);
    std::thread::sleep(Duration::from_millis(100));
    let before = player.shared().callbacks();
    std::thread::sleep(Duration::from_secs(1));
    let woken = player.shared().callbacks() - before;
    assert!(woken <= 1, "the file sink rendered {woken} times in a second of pause");
    assert_eq!(player.status().state, lectern::audio::player::PlayState::Paused);
    player.command(AudioCommand::Resume);
    assert!(player.wait_idle(Duration::from_secs(20)), "playback did not finish after resume");
    drop(player);
    assert_eq!(
        find(&wav::read(&path).unwrap(), &t),
        Some(0),
        "the take plays whole after the pause"
    );
}

#[test]
fn a_playback_file_nothing_was_played_to_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("unused.wav");
    let cfg = PlayerConfig {
        device: DeviceChoice::File,
        fallback_wav: path.clone(),
        ..PlayerConfig::default()
    };
    let player = Player::open(cfg).unwrap();
    assert!(path.exists(), "the sink writes to its file while open");
    drop(player);
    assert!(!path.exists(), "an empty playback file is removed at exit");
}
