package demo

// TrickleEvent is trickleEvent, for the tests of the demo's payloads against its catalogue.
var TrickleEvent = trickleEvent
