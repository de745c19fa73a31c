package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/hookline/hookline/internal/subscriptions"
	"github.com/hookline/hookline/web/templates"
)

// certificateData is what incidents.Service.tellCertificate puts in a certificate_expiring notification's
// data. Only these fields are read, as with stepData.
type certificateData struct {
	URL         string    `json:"url"`
	Description string    `json:"description"`
	Subject     string    `json:"subject"`
	NotAfter    time.Time `json:"not_after"`
	// Expired: the certificate had expired when the notice was claimed (saved before the notice window
	// existed, or told late after an outage).
	Expired bool   `json:"expired"`
	Link    string `json:"link"`
}

// name is the endpoint's description, else its URL as an email may show it.
func (d certificateData) name() string {
	if name := strings.TrimSpace(d.Description); name != "" {
		return name
	}
	return safeURL(d.URL)
}

// view words the notice that an endpoint's client certificate expires soon: which endpoint, which
// certificate, when, what fails then, and how to replace it.
func (d certificateData) view(brand string) templates.Email {
	endpoint, expiry := safeURL(d.URL), when(d.NotAfter)
	days := int(subscriptions.CertificateExpiryNotice / (24 * time.Hour))
	v := templates.Email{LinkLabel: "Open the endpoint in " + brand, Link: safeLink(d.Link),
		Footer: "You get this email because you are a user of this " + brand + " account. " + brand + " sends it once per " +
			"certificate, " + fmt.Sprint(days) + " days before it expires."}
	presented := brand + " presents this client certificate when " + endpoint + " asks for one (mutual TLS). "
	fails := "After that, if the endpoint requires the certificate, every delivery to it fails: the endpoint refuses " +
		"the connection, and the deliveries wait and are retried until they expire."
	if d.Expired {
		v.Subject = "The client certificate of " + d.name() + " expired on " + d.NotAfter.UTC().Format(time.DateOnly)
		v.Heading = "Your endpoint's client certificate has expired"
		presented += "It expired at " + expiry + "."
		fails = "If the endpoint requires the certificate, every delivery to it fails now: the endpoint refuses the " +
			"connection, and the deliveries wait and are retried until they expire."
	} else {
		v.Subject = "The client certificate of " + d.name() + " expires on " + d.NotAfter.UTC().Format(time.DateOnly)
		v.Heading = "Your endpoint's client certificate expires soon"
		presented += "It expires at " + expiry + "."
	}
	v.Paragraphs = []string{presented, fails,
		"To replace it, open the endpoint in " + brand + ", choose Edit, and paste the renewed certificate under Client " +
			"certificate, with its private key if the key is new too (left empty, the stored key is kept). Through the " +
			"API, send it in the endpoint's tls_client_certificate field."}
	v.Facts = []templates.EmailFact{{Label: "Endpoint", Value: endpoint}}
	if d.Description != "" {
		v.Facts = append(v.Facts, templates.EmailFact{Label: "Description", Value: d.Description})
	}
	if d.Subject != "" {
		v.Facts = append(v.Facts, templates.EmailFact{Label: "Certificate subject", Value: d.Subject})
	}
	label := "Expires"
	if d.Expired {
		label = "Expired"
	}
	v.Facts = append(v.Facts, templates.EmailFact{Label: label, Value: expiry})
	return v
}
