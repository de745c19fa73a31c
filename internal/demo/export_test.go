package demo

// TrickleEvent is trickleEvent, for the tests of the demo's payloads against its catalogue.
var TrickleEvent = trickleEvent

// EmbedPage is embedPage, the embedding demo's parent page, for its markup's tests.
var EmbedPage = embedPage
