"""The Relay text grammar (relay.lark), shipped as package data."""
