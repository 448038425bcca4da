package org.xdev;

/** What a device knows of a rank (xdev_peer_state); the ordinals are XDEV_PEER_*. */
public enum PeerState {
    /** Nothing has arrived from it yet. */
    UNKNOWN,
    /** A message from it has arrived (or it is this rank). */
    ALIVE,
    /** It died, left or broke the protocol: every request naming it fails. */
    DEAD,
}
