// Package filter is a subscription's payload filter: a JSON object in the syntax of Hookdeck's and Outpost's
// filters (Hookdeck's simple-json-match, ported to Go by Outpost as internal/simplejsonmatch), matched against
// the document {"type": <event type>, "data": <payload>}.
//
// Parse validates a filter once and compiles it to a tree of matchers, so Match does no parsing, allocates
// nothing and walks at most the filter's own depth (MaxDepth) into the event: its cost is bounded by the
// filter's size times the size of the event's values it reaches.
//
// # What a filter value means at a position of the event
//
// A filter is an object. Each of its values is matched against the event's value at the same position (the
// "value" below); a field the event does not have is "missing".
//
//   - A plain string, number, boolean or null matches an equal value (same JSON type and value: "1" is not 1,
//     numbers compare as float64, strings byte for byte), or an array having such an element. Arrays are
//     looked into one level deep: [[1]] does not contain 1.
//   - A plain array matches an array that contains, for each of the filter's elements, an element that
//     matches it ("tags": ["a", "b"] matches ["b", "c", "a"]); elements may be any filter value.
//   - An object's fields match field by field: every field named must match the value's field of that name,
//     fields the filter does not name are ignored. On an array, the fields match when one element (an
//     object) matches all of them: {"items": {"sku": "a", "qty": 2}} needs one item with both.
//     {} matches any object, so the filter {} matches every event.
//   - An object's keys that start with "$" are operators, each applied to the value; the object matches
//     when all its fields and all its operators do. An unknown "$" key is refused, so a payload field whose
//     name starts with "$" cannot be named in a filter.
//
// A missing field matches nothing except {"$exist": false}, and $not of something it does not match: plain
// values, objects, arrays, comparisons, $eq, $neq, $in and $nin all need the field to be there.
//
// # Operators
//
//   - $eq, $neq: the value equals (does not equal) the operand as a whole, deeply: objects by their fields
//     regardless of order, arrays element by element. No "array contains" here ({"$eq": 3} does not match
//     [1, 2, 3]) and no operators inside the operand. $neq is "present and not equal": a missing field
//     matches neither, so {"$neq": null} means "there and not null".
//   - $gt, $gte, $lt, $lte: the operand is a number or a string; a value of the same type compares (strings
//     byte for byte, which orders RFC 3339 timestamps of one offset correctly); other types never match. On
//     an array, an element that compares matches.
//   - $in with an array of strings, numbers, booleans and nulls: the value is one of them; on an array,
//     an element is one of them. $in with a single string: a string value contains it as a substring
//     ({"$in": "gift"} matches "gift card"); $in with a single string or number: an array value has it as
//     an element.
//   - $nin: the value is present and $in with the same operand does not match.
//   - $startsWith, $endsWith: the operand is a string or a non-empty array of strings (any one of them); the
//     value is a string with that prefix (suffix); on an array, a string element has it.
//   - $exist: true matches a present field, including one that is null; false matches a missing field.
//   - $or, $and: a non-empty array of filter values, each matched against the same value (an array as a
//     whole, like every operator); any (all) of them.
//   - $not: a filter value matched against the same value; $not matches when it does not. It is exact
//     negation everywhere, including on a missing field: {"x": {"$not": {"$eq": 1}}} matches an event with
//     no x, {"x": {"$neq": 1}} does not.
//
// # Refused at Parse (*Error, with the JSON pointer into the filter)
//
// Text over MaxBytes; text that is not one JSON value; a top level that is not an object; objects and
// arrays nested more than MaxDepth deep (the pointer names the first one too deep); a key repeated in one
// object; an unknown operator; an operand of the wrong type; a number too large for float64.
//
// # Where this differs from Outpost's simplejsonmatch, and why
//
// Outpost checks nothing when a filter is saved and answers false whenever an operator meets a type it
// does not handle; a customer sees a filter that never matches and no reason. Here every operand is checked
// at Parse, and the cases below follow the documented meaning rather than the port's accidents:
//
//   - $not and $and inside a field ({"status": {"$not": {"$in": ["cancelled"]}}}, the example in Outpost's
//     own documentation) never match a string or number in Outpost, whose value matcher knows only $or
//     among the logical operators; here they apply to the field's value like $or.
//   - A missing field: Outpost passes a field's whole condition when it contains "$exist": false, whatever
//     else it says ({"$exist": false, "$eq": 1} matches a missing field) and fails it otherwise, even under
//     $not ({"$not": {"$exist": true}} fails). Here every operator of an object must match, and $not is exact
//     negation.
//   - Operators on an array value: Outpost applies $gt, $gte, $lt, $lte, $startsWith and $endsWith to the
//     array itself (never a match), and $in and $nin with an array operand too; and when an object has any
//     operator it ignores that object's fields on an array. Here they look at the elements, as the contract's
//     "an array in the event matches when it contains it" does for plain values, and an object's fields are
//     never ignored. Conversely Outpost hands each element of an array to $or, $and and $not, and here they
//     see the array like every operator does: {"$or": [{"$eq": "a"}]} matches ["a"] there, not here (write
//     "a" or {"$in": ["a"]}).
//   - Outpost looks into nested arrays to any depth for a plain value; here one level, so the cost of a match
//     stays bounded by the filter's depth.
//   - Refused here, silently false or silently a field name in Outpost: an unknown "$" key (Outpost's
//     unimplemented $ref included), $in with objects in its array, $gt with an array (Outpost's
//     own suite expects false from {"$gt": [1, 2, 3]}), $startsWith with a number, $exist with anything
//     but true or false, $or/$and with an empty array or a non-array, a repeated key (Go's
//     encoding/json keeps the last one).
//   - Outpost's equality is Go's (1 is not "1"); Hookdeck's JavaScript original compares with == (1 is
//     "1"). This package follows Outpost.
package filter
